// The benchmark's two request lines parsed the ways simdjson offers, per message: what the
// request path's parse could cost (`make bench-parse`; figures in BENCHMARKS.md).
//
//   DOM, each line alone          stages 1 and 2 per line, the tape walked (navd parses a lone line so)
//   DOM, 16 lines per call        parse_many: stage 1 once for the lines (navd's pipelined reads)
//   On-Demand, every member       iterate, then each member read: what navd needs, since a request's
//                                 unknown params are refused and so every key is read
//   On-Demand, 16 lines per call  iterate_many, every member read
//   On-Demand, by name            the envelope's members and the params navd needs looked up by
//                                 name, the rest left unread (not enough for navd: unknown params
//                                 and malformed values in unread places go unnoticed)
//
// `parse-shapes COUNT ROUNDS`; under callgrind (`valgrind --tool=callgrind .build/parse-shapes 160000 1`)
// each way is a function of its own, so instructions per message are its inclusive count / COUNT.
//
// Built with -march=native so that On-Demand, compiled into this file, uses this CPU's kernels
// (the DOM parser is the library's, which picks them at run time).
#include <simdjson.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace simdjson;

static const char *navigate =
    R"({"jsonrpc":"2.0","id":123456,"method":"navigate","params":{"session":"s7","to":"shop.Product","with":{"id":"42"}}})";
static const char *dismiss = R"({"jsonrpc":"2.0","id":123457,"method":"dismiss","params":{"session":"s7"}})";
static volatile size_t sink;

static size_t walk(dom::element e) {
    size_t n = 0;
    switch (e.type()) {
    case dom::element_type::OBJECT:
        for (auto f : dom::object(e)) n += f.key.size() + walk(f.value);
        break;
    case dom::element_type::ARRAY:
        for (auto v : dom::array(e)) n += walk(v);
        break;
    case dom::element_type::STRING: n += std::string_view(e).size(); break;
    case dom::element_type::INT64: n += size_t(int64_t(e)); break;
    default: n++;
    }
    return n;
}

static size_t walk(ondemand::value v);
static size_t walkObject(ondemand::object o) {
    size_t n = 0;
    for (auto f : o) {
        std::string_view k = f.unescaped_key();
        n += k.size() + walk(f.value());
    }
    return n;
}
static size_t walk(ondemand::value v) {
    switch (v.type()) {
    case ondemand::json_type::object: return walkObject(v.get_object());
    case ondemand::json_type::array: {
        size_t n = 0;
        for (auto x : v.get_array()) n += walk(x.value());
        return n;
    }
    case ondemand::json_type::string: return std::string_view(v.get_string()).size();
    case ondemand::json_type::number: return size_t(int64_t(v.get_int64()));
    default: return 1;
    }
}

static size_t byName(ondemand::document &d) {
    ondemand::object o = d.get_object();
    size_t n = std::string_view(o["jsonrpc"].get_string()).size();
    n += size_t(int64_t(o["id"].get_int64()));
    std::string_view method = o["method"].get_string();
    n += method.size();
    ondemand::object p = o["params"].get_object();
    n += std::string_view(p.find_field_unordered("session").get_string()).size();
    if (method == "navigate") {
        n += std::string_view(p.find_field_unordered("to").get_string()).size();
        n += walkObject(p.find_field_unordered("with").get_object());
    }
    return n;
}

// Each way over `count` messages, out of line so that callgrind counts each alone.
#define WAY __attribute__((noinline)) static size_t
WAY domEach(dom::parser &p, padded_string &nav, padded_string &dis, long count) {
    size_t s = 0;
    for (long i = 0; i < count; i++) s += walk(p.parse(i & 1 ? dis : nav).value());
    return s;
}
WAY domMany(dom::parser &p, padded_string &batch, long count) {
    size_t s = 0;
    for (long i = 0; i < count / 16; i++)
        for (auto e : p.parse_many(batch)) s += walk(e.value());
    return s;
}
WAY onDemandEach(ondemand::parser &p, padded_string &nav, padded_string &dis, long count) {
    size_t s = 0;
    for (long i = 0; i < count; i++) {
        ondemand::document d = p.iterate(i & 1 ? dis : nav);
        s += walkObject(d.get_object());
    }
    return s;
}
WAY onDemandMany(ondemand::parser &p, padded_string &batch, long count) {
    size_t s = 0;
    for (long i = 0; i < count / 16; i++) {
        ondemand::document_stream stream = p.iterate_many(batch);
        for (auto d : stream) s += walkObject(d.get_object());
    }
    return s;
}
WAY onDemandByName(ondemand::parser &p, padded_string &nav, padded_string &dis, long count) {
    size_t s = 0;
    for (long i = 0; i < count; i++) {
        ondemand::document d = p.iterate(i & 1 ? dis : nav);
        s += byName(d);
    }
    return s;
}

int main(int argc, char **argv) {
    long count = argc > 1 ? atol(argv[1]) : 4000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    padded_string nav{std::string(navigate)}, dis{std::string(dismiss)};
    std::string lines;
    for (int i = 0; i < 8; i++) lines += std::string(navigate) + "\n" + dismiss + "\n";
    padded_string batch{lines};
    dom::parser domParser;
    ondemand::parser odParser;
    using clock = std::chrono::steady_clock;
    auto perMessage = [&](clock::time_point a, clock::time_point b) {
        return std::chrono::duration<double, std::nano>(b - a).count() / double(count);
    };
    printf("ns per message, %ld messages (navigate and dismiss by turns), DOM kernels: %s\n", count,
           get_active_implementation()->name().c_str());
    printf("%-6s %10s %10s %10s %10s %10s\n", "round", "DOM each", "DOM x16", "OD each", "OD x16", "OD byname");
    for (int r = 1; r <= rounds; r++) {
        size_t s = 0;
        auto t0 = clock::now();
        s += domEach(domParser, nav, dis, count);
        auto t1 = clock::now();
        s += domMany(domParser, batch, count);
        auto t2 = clock::now();
        s += onDemandEach(odParser, nav, dis, count);
        auto t3 = clock::now();
        s += onDemandMany(odParser, batch, count);
        auto t4 = clock::now();
        s += onDemandByName(odParser, nav, dis, count);
        auto t5 = clock::now();
        sink = s;
        printf("%-6d %10.1f %10.1f %10.1f %10.1f %10.1f\n", r, perMessage(t0, t1), perMessage(t1, t2), perMessage(t2, t3),
               perMessage(t3, t4), perMessage(t4, t5));
    }
}
