// The one place navd touches simdjson: parse into a flat list of events that Swift turns
// into JSONValue or reads in place (JSONView). Keeping the interface this narrow lets the JSON library change freely.
#include "CSimdJSON.h"
#include <simdjson.h>
#include <vector>
#include <cstring>

struct navjson_parser {
    simdjson::dom::parser parser;
    std::vector<char> padded;
    std::vector<navjson_event> events;
    uint32_t configured_depth = 0;
    const char *last_error = "";
};

extern "C" navjson_parser *navjson_parser_new(void) { return new navjson_parser(); }
extern "C" void navjson_parser_free(navjson_parser *p) { delete p; }
extern "C" const char *navjson_last_error(navjson_parser *p) { return p->last_error; }

static void emit(navjson_parser *p, simdjson::dom::element e) {
    using namespace simdjson;
    navjson_event ev;
    ev.len = 0;
    ev.v.i = 0;
    switch (e.type()) {
    case dom::element_type::NULL_VALUE:
        ev.type = NAVJSON_NULL;
        p->events.push_back(ev);
        break;
    case dom::element_type::BOOL:
        ev.type = bool(e.get_bool().value_unsafe()) ? NAVJSON_TRUE : NAVJSON_FALSE;
        p->events.push_back(ev);
        break;
    case dom::element_type::INT64:
        ev.type = NAVJSON_INT;
        ev.v.i = e.get_int64().value_unsafe();
        p->events.push_back(ev);
        break;
    case dom::element_type::UINT64:
        ev.type = NAVJSON_DOUBLE;
        ev.v.d = double(e.get_uint64().value_unsafe());
        p->events.push_back(ev);
        break;
    case dom::element_type::DOUBLE:
        ev.type = NAVJSON_DOUBLE;
        ev.v.d = e.get_double().value_unsafe();
        p->events.push_back(ev);
        break;
    case dom::element_type::STRING: {
        std::string_view sv = e.get_string().value_unsafe();
        ev.type = NAVJSON_STRING;
        ev.v.s = sv.data();
        ev.len = uint32_t(sv.size());
        p->events.push_back(ev);
        break;
    }
    case dom::element_type::ARRAY: {
        dom::array a = e.get_array().value_unsafe();
        ev.type = NAVJSON_ARRAY;
        ev.len = uint32_t(a.size());
        size_t at = p->events.size();
        p->events.push_back(ev);
        for (dom::element child : a) emit(p, child);
        p->events[at].v.i = int64_t(p->events.size());
        break;
    }
    case dom::element_type::OBJECT: {
        dom::object o = e.get_object().value_unsafe();
        ev.type = NAVJSON_OBJECT;
        ev.len = uint32_t(o.size());
        size_t at = p->events.size();
        p->events.push_back(ev);
        for (dom::key_value_pair kv : o) {
            navjson_event k;
            k.type = NAVJSON_KEY;
            k.v.s = kv.key.data();
            k.len = uint32_t(kv.key.size());
            p->events.push_back(k);
            emit(p, kv.value);
        }
        p->events[at].v.i = int64_t(p->events.size());
        break;
    }
    }
}

extern "C" int navjson_parse(navjson_parser *p, const char *data, size_t len, uint32_t max_depth,
                             const navjson_event **events, size_t *count) {
    using namespace simdjson;
    p->events.clear();
    size_t i = 0;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n')) i++;
    if (i == len) {
        p->last_error = "the message is empty";
        return NAVJSON_ERR_EMPTY;
    }
    if (p->padded.size() < len + SIMDJSON_PADDING) p->padded.resize(len + SIMDJSON_PADDING);
    std::memcpy(p->padded.data(), data, len);
    std::memset(p->padded.data() + len, 0, SIMDJSON_PADDING);
    uint32_t wanted = max_depth;
    if (p->configured_depth != wanted || p->parser.capacity() < len) {
        size_t cap = len < 4096 ? 4096 : len;
        if (p->parser.allocate(cap, wanted) != SUCCESS) {
            p->last_error = "out of memory while parsing";
            return NAVJSON_ERR_OTHER;
        }
        p->configured_depth = wanted;
    }
    dom::element root;
    error_code err = p->parser.parse(p->padded.data(), len, false).get(root);
    if (err != SUCCESS) {
        p->last_error = error_message(err);
        switch (err) {
        case DEPTH_ERROR: return NAVJSON_ERR_DEPTH;
        case UTF8_ERROR: return NAVJSON_ERR_UTF8;
        case EMPTY: return NAVJSON_ERR_EMPTY;
        default: return NAVJSON_ERR_SYNTAX;
        }
    }
    emit(p, root);
    *events = p->events.data();
    *count = p->events.size();
    return NAVJSON_OK;
}
