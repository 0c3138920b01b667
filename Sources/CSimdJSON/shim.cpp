// The one place navd touches simdjson: parse into simdjson's tape, which Swift reads in place
// (JSONView) or turns into JSONValue. Keeping the interface this narrow lets the JSON library
// change freely.
#include "CSimdJSON.h"
#include "scanner.h"
#include <simdjson.h>
#include <vector>
#include <cstring>

static_assert(NAVJSON_PADDING >= simdjson::SIMDJSON_PADDING, "NAVJSON_PADDING must cover simdjson's padding");

struct navjson_parser {
    simdjson::dom::parser parser;
    std::vector<char> padded;
    uint32_t configured_depth = 0;
    const char *last_error = "";
    // Documents go to the scanner (scanner.cpp) first, unless this is cleared (tests compare).
    bool scanner = true;
    // A batch (navjson_batch_begin): the lines of [batch, batch + batch_len) are parsed one after the
    // other while `batch` is set. Most are the scanner's; the first the scanner leaves has stage 1
    // index the batch from that line on (from `indexed`), and stage 2 alone parses it and every later
    // line the scanner leaves.
    const char *batch = nullptr;
    size_t batch_len = 0;
    const char *indexed = nullptr;
    uint64_t batched = 0;  // documents parsed by stage 2 alone, for tests
    uint64_t scanned = 0;  // documents parsed by the scanner, for tests
};

extern "C" navjson_parser *navjson_parser_new(void) { return new navjson_parser(); }
extern "C" void navjson_parser_free(navjson_parser *p) { delete p; }
extern "C" const char *navjson_last_error(navjson_parser *p) { return p->last_error; }

static int parse(navjson_parser *p, const char *data, size_t len, uint32_t max_depth, bool padded,
                 const uint64_t **tape, const uint8_t **strings);

extern "C" int navjson_parse(navjson_parser *p, const char *data, size_t len, uint32_t max_depth,
                             const uint64_t **tape, const uint8_t **strings) {
    return parse(p, data, len, max_depth, false, tape, strings);
}

extern "C" int navjson_parse_padded(navjson_parser *p, const char *data, size_t len, uint32_t max_depth,
                                    const uint64_t **tape, const uint8_t **strings) {
    return parse(p, data, len, max_depth, true, tape, strings);
}

/// Makes the parser ready for documents of up to `len` bytes nested at most `max_depth` deep.
static bool reserve(navjson_parser *p, size_t len, uint32_t max_depth) {
    using namespace simdjson;
    if (p->configured_depth != max_depth || p->parser.capacity() < len) {
        size_t cap = len < 4096 ? 4096 : len;
        if (p->parser.allocate(cap, max_depth) != SUCCESS) {
            p->last_error = "out of memory while parsing";
            return false;
        }
        p->configured_depth = max_depth;
    }
    // The batch path writes the document without parse(), which sizes it.
    if (p->parser.doc.capacity() < p->parser.capacity() && p->parser.doc.allocate(p->parser.capacity()) != SUCCESS) {
        p->last_error = "out of memory while parsing";
        return false;
    }
    return true;
}

extern "C" void navjson_batch_begin(navjson_parser *p, const char *data, size_t len, uint32_t max_depth) {
    p->batch = nullptr;
    p->indexed = nullptr;
    if (len == 0 || len > NAVJSON_MAX_BATCH || !reserve(p, len, max_depth)) return;
    p->batch = data;
    p->batch_len = len;
}

extern "C" void navjson_batch_end(navjson_parser *p) { p->batch = nullptr; }
extern "C" uint64_t navjson_batched(navjson_parser *p) { return p->batched; }
extern "C" uint64_t navjson_scanned(navjson_parser *p) { return p->scanned; }
extern "C" void navjson_set_scanner(navjson_parser *p, int enabled) { p->scanner = enabled != 0; }

/// Stage 2 of the next document of the batch, when it is exactly the line [data, data + len): it
/// starts in the line, ends in it, and the document after it (if any) starts after the line. Then
/// the line's structural characters are those a parse of the line alone would find (stage 1 fails
/// on a raw newline inside a string, so every line of a batch starts outside one), and the result
/// is the same. Anything else ends the batch; the caller parses the line alone.
///
/// Stage 1 runs here, once, on the first line the scanner leaves: from that line to the batch's
/// end. The lines the scanner took since the last one parsed here are passed over in the index.
static bool parse_in_batch(navjson_parser *p, const char *data, size_t len) {
    using namespace simdjson;
    if (data < p->batch || data >= p->batch + p->batch_len) return false;
    auto *impl = p->parser.implementation.get();
    if (!p->indexed) {
        size_t rest = p->batch_len - size_t(data - p->batch);
        // Any error (one bad line spoils the index of all) leaves the lines to be parsed one by one.
        if (impl->stage1(reinterpret_cast<const uint8_t *>(data), rest, stage1_mode::streaming_final) != SUCCESS) return false;
        p->indexed = data;
    }
    const char *indexed = p->indexed;
    if (data < indexed) return false;
    size_t from = size_t(data - indexed), to = from + len;
    size_t indexed_len = p->batch_len - size_t(indexed - p->batch);
    uint32_t next = impl->next_structural_index;
    uint32_t count = impl->n_structural_indexes;
    if (to > indexed_len || next >= count) return false;
    if (impl->structural_indexes[next] < from) {
        // The first structural character at or after `from` (the lines between were scanned).
        uint32_t lo = next, hi = count;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (impl->structural_indexes[mid] < from) lo = mid + 1; else hi = mid;
        }
        if (lo >= count) return false;
        impl->next_structural_index = next = lo;
    }
    size_t start = impl->structural_indexes[next];
    if (start >= to) return false;
    if (impl->stage2_next(p->parser.doc) != SUCCESS) return false;
    uint32_t after = impl->next_structural_index;
    size_t last = impl->structural_indexes[after - 1];
    if (last >= to) return false;
    if (after < count) return impl->structural_indexes[after] >= to;
    // The last document indexed: stage 1 of a stream leaves out what follows the last document it
    // judges complete, so the rest of the line is read here. Only an object or array is judged
    // (a scalar's last structural character is its first).
    if (indexed[last] != '}' && indexed[last] != ']') return false;
    for (size_t i = last + 1; i < to; i++) {
        char c = indexed[i];
        if (c != ' ' && c != '\t' && c != '\r') return false;
    }
    return true;
}

static int parse(navjson_parser *p, const char *data, size_t len, uint32_t max_depth, bool padded,
                 const uint64_t **tape, const uint8_t **strings) {
    using namespace simdjson;
    size_t i = 0;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n')) i++;
    if (i == len) {
        p->last_error = "the message is empty";
        return NAVJSON_ERR_EMPTY;
    }
    const char *input = data;
    if (!padded) {
        if (p->padded.size() < len + SIMDJSON_PADDING) p->padded.resize(len + SIMDJSON_PADDING);
        std::memcpy(p->padded.data(), data, len);
        std::memset(p->padded.data() + len, 0, SIMDJSON_PADDING);
        input = p->padded.data();
    }
    // Another depth reallocates the parser, and the batch's index with it.
    if (p->batch && p->configured_depth != max_depth) p->batch = nullptr;
    if (!reserve(p, len, max_depth)) return NAVJSON_ERR_OTHER;
    *tape = p->parser.doc.tape.get();
    *strings = p->parser.doc.string_buf.get();
    if (p->scanner) {
        // simdjson's document buffers, at the sizes document::allocate gives them for its capacity.
        size_t capacity = p->parser.doc.capacity();
        if (navjson_scan(reinterpret_cast<const uint8_t *>(input), len, max_depth, p->parser.doc.tape.get(), capacity + 3,
                         p->parser.doc.string_buf.get(), 5 * capacity / 3 + SIMDJSON_PADDING)) {
            p->scanned++;
            return NAVJSON_OK;
        }
    }
    if (p->batch) {
        if (parse_in_batch(p, data, len)) {
            p->batched++;
            return NAVJSON_OK;
        }
        p->batch = nullptr;
    }
    dom::element root;  // unused: the document is read from the parser's tape
    error_code err = p->parser.parse(input, len, false).get(root);
    if (err != SUCCESS) {
        p->last_error = error_message(err);
        switch (err) {
        case DEPTH_ERROR: return NAVJSON_ERR_DEPTH;
        case UTF8_ERROR: return NAVJSON_ERR_UTF8;
        case EMPTY: return NAVJSON_ERR_EMPTY;
        default: return NAVJSON_ERR_SYNTAX;
        }
    }
    // Swift reads the document from the tape (see JSONView).
    *tape = p->parser.doc.tape.get();
    *strings = p->parser.doc.string_buf.get();
    return NAVJSON_OK;
}

extern "C" int navjson_scan_check(navjson_parser *p, const char *data, size_t len, uint32_t max_depth) {
    // The scanner into buffers of its own, of the least sizes it takes, followed by a canary that
    // must be left as it was, and the input followed by quotes (which a scanner reading past the
    // end would take for the end of a string).
    constexpr size_t canary = 64;
    std::vector<char> input(len + simdjson::SIMDJSON_PADDING, '"');
    if (len) std::memcpy(input.data(), data, len);
    std::vector<uint64_t> tape(len + 3 + canary, 0x5A5A5A5A5A5A5A5AULL);
    std::vector<uint8_t> strings(5 * len / 3 + 32 + canary, 0x5A);
    bool took = navjson_scan(reinterpret_cast<const uint8_t *>(input.data()), len, max_depth, tape.data(), len + 3,
                             strings.data(), 5 * len / 3 + 32);
    for (size_t i = len + 3; i < tape.size(); i++) if (tape[i] != 0x5A5A5A5A5A5A5A5AULL) return NAVJSON_SCAN_DIFFERENT;
    for (size_t i = 5 * len / 3 + 32; i < strings.size(); i++) if (strings[i] != 0x5A) return NAVJSON_SCAN_DIFFERENT;
    // simdjson alone.
    bool scanner = p->scanner;
    p->scanner = false;
    p->batch = nullptr;
    const uint64_t *expected = nullptr;
    const uint8_t *expected_strings = nullptr;
    int rc = parse(p, data, len, max_depth, false, &expected, &expected_strings);
    p->scanner = scanner;
    if (!took) return NAVJSON_SCAN_LEFT;
    if (rc != NAVJSON_OK) return NAVJSON_SCAN_DIFFERENT;
    constexpr uint64_t payload = 0x00FFFFFFFFFFFFFFULL;
    size_t words = size_t(expected[0] & payload);
    if (tape[0] != expected[0] || words > tape.size()) return NAVJSON_SCAN_DIFFERENT;
    for (size_t i = 1; i < words; i++) {
        if (tape[i] != expected[i]) return NAVJSON_SCAN_DIFFERENT;
        char type = char(tape[i] >> 56);
        if (type == 'l' || type == 'u' || type == 'd') {
            i++;
            if (i >= words || tape[i] != expected[i]) return NAVJSON_SCAN_DIFFERENT;
        } else if (type == '"') {
            size_t offset = size_t(tape[i] & payload);
            uint32_t length;
            if (offset + 5 > strings.size()) return NAVJSON_SCAN_DIFFERENT;
            std::memcpy(&length, strings.data() + offset, 4);
            // The length, the bytes and the NUL.
            if (offset + 5 + length > strings.size() ||
                std::memcmp(strings.data() + offset, expected_strings + offset, 5 + size_t(length)) != 0)
                return NAVJSON_SCAN_DIFFERENT;
        }
    }
    return NAVJSON_SCAN_SAME;
}
