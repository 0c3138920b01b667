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
    uint32_t wanted = max_depth;
    if (p->configured_depth != wanted || p->parser.capacity() < len) {
        size_t cap = len < 4096 ? 4096 : len;
        if (p->parser.allocate(cap, wanted) != SUCCESS) {
            p->last_error = "out of memory while parsing";
            return NAVJSON_ERR_OTHER;
        }
        p->configured_depth = wanted;
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
