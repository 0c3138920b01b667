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

// Walks simdjson's tape (its documented DOM layout: one 64-bit word per value, the type in the top
// byte; containers hold the index past their end and their element count; strings point into the
// string buffer, length first; numbers take a second word) and emits events. Returns the index of
// the tape word after the value at `i`.
static size_t emit(navjson_parser *p, const uint64_t *tape, const uint8_t *strings, size_t i) {
    using namespace simdjson::internal;
    const uint64_t word = tape[i];
    const uint64_t payload = word & JSON_VALUE_MASK;
    navjson_event ev;
    ev.len = 0;
    ev.v.i = 0;
    switch (char(word >> 56)) {
    case 'n':
        ev.type = NAVJSON_NULL;
        p->events.push_back(ev);
        return i + 1;
    case 't':
        ev.type = NAVJSON_TRUE;
        p->events.push_back(ev);
        return i + 1;
    case 'f':
        ev.type = NAVJSON_FALSE;
        p->events.push_back(ev);
        return i + 1;
    case 'l':
        ev.type = NAVJSON_INT;
        ev.v.i = int64_t(tape[i + 1]);
        p->events.push_back(ev);
        return i + 2;
    case 'u':
        ev.type = NAVJSON_DOUBLE;
        ev.v.d = double(tape[i + 1]);
        p->events.push_back(ev);
        return i + 2;
    case 'd': {
        ev.type = NAVJSON_DOUBLE;
        uint64_t bits = tape[i + 1];
        std::memcpy(&ev.v.d, &bits, sizeof(double));
        p->events.push_back(ev);
        return i + 2;
    }
    case '"': {
        uint32_t len;
        std::memcpy(&len, strings + payload, sizeof(len));
        ev.type = NAVJSON_STRING;
        ev.v.s = reinterpret_cast<const char *>(strings + payload + sizeof(uint32_t));
        ev.len = len;
        p->events.push_back(ev);
        return i + 1;
    }
    case '[':
    case '{': {
        const bool object = char(word >> 56) == '{';
        const size_t end = size_t(uint32_t(payload));  // the word after the closing bracket
        ev.type = object ? NAVJSON_OBJECT : NAVJSON_ARRAY;
        const size_t at = p->events.size();
        p->events.push_back(ev);
        uint32_t n = 0;
        size_t j = i + 1;
        while (j < end - 1) {
            if (object) {
                // The key: a string word.
                const uint64_t k = tape[j] & JSON_VALUE_MASK;
                uint32_t klen;
                std::memcpy(&klen, strings + k, sizeof(klen));
                navjson_event key;
                key.type = NAVJSON_KEY;
                key.v.s = reinterpret_cast<const char *>(strings + k + sizeof(uint32_t));
                key.len = klen;
                p->events.push_back(key);
                j += 1;
            }
            j = emit(p, tape, strings, j);
            n++;
        }
        p->events[at].len = n;
        p->events[at].v.i = int64_t(p->events.size());
        return end;
    }
    default:  // not reached for a document simdjson accepted
        ev.type = NAVJSON_NULL;
        p->events.push_back(ev);
        return i + 1;
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
    dom::element root;  // the document is read from the parser's tape below
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
    emit(p, p->parser.doc.tape.get(), p->parser.doc.string_buf.get(), 1);
    *events = p->events.data();
    *count = p->events.size();
    return NAVJSON_OK;
}
