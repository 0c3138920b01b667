#ifndef NAVD_CSIMDJSON_H
#define NAVD_CSIMDJSON_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/// Kinds of the flat events that describe a parsed document, in document order.
enum {
    NAVJSON_NULL = 0,
    NAVJSON_TRUE = 1,
    NAVJSON_FALSE = 2,
    NAVJSON_INT = 3,     // v.i
    NAVJSON_DOUBLE = 4,  // v.d
    NAVJSON_STRING = 5,  // v.s, len
    NAVJSON_ARRAY = 6,   // len = element count, v.i = index of the event after the array; the elements follow
    NAVJSON_OBJECT = 7,  // len = member count, v.i = index of the event after the object; each member is a KEY event then its value
    NAVJSON_KEY = 8,     // v.s, len
};

/// Outcome of a parse.
enum {
    NAVJSON_OK = 0,
    NAVJSON_ERR_SYNTAX = 1,
    NAVJSON_ERR_UTF8 = 2,
    NAVJSON_ERR_DEPTH = 3,
    NAVJSON_ERR_EMPTY = 4,
    NAVJSON_ERR_OTHER = 5,
};

typedef struct navjson_event {
    uint32_t type;
    uint32_t len;
    union {
        int64_t i;
        double d;
        const char *s;
    } v;
} navjson_event;

/// A reusable parser. Not thread-safe; one per thread.
typedef struct navjson_parser navjson_parser;

navjson_parser *navjson_parser_new(void);
void navjson_parser_free(navjson_parser *p);

/// Parses `len` bytes at `data` (no padding required: they are copied into a padded buffer).
/// On NAVJSON_OK, `*events` / `*count` describe the document; the strings they point to stay
/// valid until the next call on the same parser. `max_depth` bounds the nesting of arrays
/// and objects (a scalar document has depth 0).
int navjson_parse(navjson_parser *p, const char *data, size_t len, uint32_t max_depth,
                  const navjson_event **events, size_t *count);

/// A short English description of the last error of `p`.
const char *navjson_last_error(navjson_parser *p);

#ifdef __cplusplus
}
#endif
#endif
