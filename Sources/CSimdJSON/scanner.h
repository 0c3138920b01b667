// The one-pass scanner (scanner.cpp): internal to this module, not part of its C interface.
#ifndef NAVD_CSIMDJSON_SCANNER_H
#define NAVD_CSIMDJSON_SCANNER_H
#include <stddef.h>
#include <stdint.h>

/// The deepest nesting the scanner takes on itself; deeper documents are left to simdjson.
#define NAVJSON_SCAN_MAX_DEPTH 32

/// Reads the document [data, data + len) (followed by NAVJSON_PADDING readable bytes, whatever
/// they hold) in one pass and writes simdjson's tape and string buffer for it, word for word and
/// byte for byte what simdjson's parser writes. Returns false, having written anything, for every
/// document it does not take on: any error, and what it leaves to simdjson (a number that is not a
/// 64-bit integer written plainly, `-0`, a `\u` escape, nesting deeper than `max_depth - 2` or
/// NAVJSON_SCAN_MAX_DEPTH, a tape or string buffer too small). The caller then parses the document
/// with simdjson, which finds and names the error if there is one.
///
/// `tape_words` and `string_bytes` are the buffers' sizes: at least `len + 3` and `5 * len / 3 + 32`
/// (simdjson's buffers for a document of `len` bytes are larger), or the scanner leaves the document.
bool navjson_scan(const uint8_t *data, size_t len, uint32_t max_depth, uint64_t *tape, size_t tape_words,
                  uint8_t *strings, size_t string_bytes);

#endif
