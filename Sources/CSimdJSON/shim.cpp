// The one place navd touches simdjson: parse into simdjson's tape, which Swift reads in place
// (JSONView) or turns into JSONValue. Keeping the interface this narrow lets the JSON library
// change freely.
#include "CSimdJSON.h"
#include <simdjson.h>
#include <vector>
#include <cstring>

static_assert(NAVJSON_PADDING >= simdjson::SIMDJSON_PADDING, "NAVJSON_PADDING must cover simdjson's padding");

struct navjson_parser {
    simdjson::dom::parser parser;
    std::vector<char> padded;
    uint32_t configured_depth = 0;
    const char *last_error = "";
    // A batch (navjson_batch_begin): stage 1 has indexed [batch, batch + batch_len) and the lines
    // in it are parsed one after the other by stage 2 alone, while `batch` is set.
    const char *batch = nullptr;
    size_t batch_len = 0;
    uint64_t batched = 0;  // documents parsed by stage 2 alone, for tests
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
    using namespace simdjson;
    p->batch = nullptr;
    if (len == 0 || len > NAVJSON_MAX_BATCH || !reserve(p, len, max_depth)) return;
    // Any error (one bad line spoils the index of all) leaves the lines to be parsed one by one.
    if (p->parser.implementation->stage1(reinterpret_cast<const uint8_t *>(data), len, stage1_mode::streaming_final) != SUCCESS) return;
    p->batch = data;
    p->batch_len = len;
}

extern "C" void navjson_batch_end(navjson_parser *p) { p->batch = nullptr; }
extern "C" uint64_t navjson_batched(navjson_parser *p) { return p->batched; }

/// Stage 2 of the next document of the batch, when it is exactly the line [data, data + len): it
/// starts in the line, ends in it, and the document after it (if any) starts after the line. Then
/// the line's structural characters are those a parse of the line alone would find (stage 1 fails
/// on a raw newline inside a string, so every line of a batch starts outside one), and the result
/// is the same. Anything else ends the batch; the caller parses the line alone.
static bool parse_in_batch(navjson_parser *p, const char *data, size_t len) {
    using namespace simdjson;
    if (data < p->batch) return false;
    auto *impl = p->parser.implementation.get();
    size_t from = size_t(data - p->batch), to = from + len;
    uint32_t next = impl->next_structural_index;
    if (to > p->batch_len || next >= impl->n_structural_indexes) return false;
    size_t start = impl->structural_indexes[next];
    if (start < from || start >= to) return false;
    if (impl->stage2_next(p->parser.doc) != SUCCESS) return false;
    uint32_t after = impl->next_structural_index;
    size_t last = impl->structural_indexes[after - 1];
    if (last >= to) return false;
    if (after < impl->n_structural_indexes) return impl->structural_indexes[after] >= to;
    // The last document indexed: stage 1 of a stream leaves out what follows the last document it
    // judges complete, so the rest of the line is read here. Only an object or array is judged
    // (a scalar's last structural character is its first).
    if (p->batch[last] != '}' && p->batch[last] != ']') return false;
    for (size_t i = last + 1; i < to; i++) {
        char c = p->batch[i];
        if (c != ' ' && c != '\t' && c != '\r') return false;
    }
    return true;
}

/// Stage 2 of [data, data + len) from the batch's index (parse_in_batch), handing out the document;
/// when the index does not serve it, the batch ends and the caller parses alone.
static bool parse_from_batch(navjson_parser *p, const char *data, size_t len, uint32_t max_depth,
                             const uint64_t **tape, const uint8_t **strings) {
    if (p->configured_depth == max_depth && parse_in_batch(p, data, len)) {
        *tape = p->parser.doc.tape.get();
        *strings = p->parser.doc.string_buf.get();
        p->batched++;
        return true;
    }
    p->batch = nullptr;
    return false;
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
    if (p->batch && parse_from_batch(p, data, len, max_depth, tape, strings)) return NAVJSON_OK;
    const char *input = data;
    if (!padded) {
        if (p->padded.size() < len + SIMDJSON_PADDING) p->padded.resize(len + SIMDJSON_PADDING);
        std::memcpy(p->padded.data(), data, len);
        std::memset(p->padded.data() + len, 0, SIMDJSON_PADDING);
        input = p->padded.data();
    }
    if (!reserve(p, len, max_depth)) return NAVJSON_ERR_OTHER;
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

/// Moves the batch's next document past the structural characters before `end`; `hint`: how many
/// the caller expects there are (looked at first; 0 for no guess).
static void skip_before(navjson_parser *p, const char *end, uint32_t hint) {
    if (!p->batch || end < p->batch) return;
    auto *impl = p->parser.implementation.get();
    size_t to = size_t(end - p->batch);
    uint32_t next = impl->next_structural_index, n = impl->n_structural_indexes;
    if (hint > 0 && next + hint < n && impl->structural_indexes[next + hint] >= to && impl->structural_indexes[next + hint - 1] < to) {
        impl->next_structural_index = next + hint;
        return;
    }
    while (next < n && impl->structural_indexes[next] < to) next++;
    impl->next_structural_index = next;
}

extern "C" int navjson_parse_part(navjson_parser *p, const char *data, size_t len, const char *line_end, uint32_t before,
                                  uint32_t max_depth, const uint64_t **tape, const uint8_t **strings) {
    if (p->batch) {
        skip_before(p, data, before);
        if (parse_from_batch(p, data, len, max_depth, tape, strings)) {
            skip_before(p, line_end, 1);
            return NAVJSON_OK;
        }
    }
    return parse(p, data, len, max_depth, true, tape, strings);
}

extern "C" void navjson_batch_skip(navjson_parser *p, const char *line_end, uint32_t count) { skip_before(p, line_end, count); }
