#ifndef NAVD_CSIMDJSON_H
#define NAVD_CSIMDJSON_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

/// Outcome of a parse.
enum {
    NAVJSON_OK = 0,
    NAVJSON_ERR_SYNTAX = 1,
    NAVJSON_ERR_UTF8 = 2,
    NAVJSON_ERR_DEPTH = 3,
    NAVJSON_ERR_EMPTY = 4,
    NAVJSON_ERR_OTHER = 5,
};

/// A reusable parser. Not thread-safe; one per thread.
typedef struct navjson_parser navjson_parser;

navjson_parser *navjson_parser_new(void);
void navjson_parser_free(navjson_parser *p);

/// Parses `len` bytes at `data` (no padding required: they are copied into a padded buffer).
/// On NAVJSON_OK, `*tape` and `*strings` are simdjson's tape and string buffer for the document
/// (the layout simdjson documents as its tape format: word 0 is the root, the value starts at
/// word 1); they stay valid until the next call on the same parser. `max_depth` bounds the
/// nesting of arrays and objects (a scalar document has depth 0).
int navjson_parse(navjson_parser *p, const char *data, size_t len, uint32_t max_depth,
                  const uint64_t **tape, const uint8_t **strings);

/// As navjson_parse, for input followed by at least NAVJSON_PADDING readable bytes (whatever they
/// hold): parsed in place, without the copy into a padded buffer.
int navjson_parse_padded(navjson_parser *p, const char *data, size_t len, uint32_t max_depth,
                         const uint64_t **tape, const uint8_t **strings);

/// The readable bytes navjson_parse_padded needs after its input (simdjson's SIMDJSON_PADDING).
#define NAVJSON_PADDING 64

/// Indexes `len` bytes of complete lines at `data` (followed by NAVJSON_PADDING readable bytes)
/// in one pass of simdjson's stage 1, so that parsing those lines in order, each with
/// navjson_parse_padded, costs only stage 2 each. Any other call, a line out of order or one the
/// index does not match ends the batch and is parsed alone, so the results are those of parsing
/// each line alone. Batches longer than NAVJSON_MAX_BATCH are not indexed.
void navjson_batch_begin(navjson_parser *p, const char *data, size_t len, uint32_t max_depth);
/// Ends the batch (the bytes may change after).
void navjson_batch_end(navjson_parser *p);
/// How many documents were parsed from a batch's index (by stage 2 alone) so far.
uint64_t navjson_batched(navjson_parser *p);
#define NAVJSON_MAX_BATCH (1024 * 1024)
/// As navjson_parse_padded, for a value inside a line whose other bytes the caller has read itself
/// (`data` lies in the line, which ends at `line_end`): in a batch, the structural characters of
/// the line before `data` are passed over first (`before`: how many the caller expects, looked at
/// first; 0 for no guess), and on success those up to `line_end`, so that the next line is parsed
/// from the index as if this one had been parsed whole.
int navjson_parse_part(navjson_parser *p, const char *data, size_t len, const char *line_end, uint32_t before,
                       uint32_t max_depth, const uint64_t **tape, const uint8_t **strings);
/// In a batch, passes over the structural characters of a line the caller read itself (up to
/// `line_end`; `count`: how many the caller expects, or 0); nothing outside a batch.
void navjson_batch_skip(navjson_parser *p, const char *line_end, uint32_t count);

/// A short English description of the last error of `p`.
const char *navjson_last_error(navjson_parser *p);

#ifdef __cplusplus
}
#endif
#endif
