#include "checksum.h"

static uint32_t table[256];
static int table_ready;

static void make_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
    table_ready = 1;
}

static uint32_t crc32c_table(const unsigned char *p, size_t n) {
    if (!table_ready) make_table();
    uint32_t c = 0xFFFFFFFFu;
    while (n--) c = table[(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t navd_crc32c_portable(const void *data, size_t n) { return crc32c_table((const unsigned char *)data, n); }

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(const unsigned char *p, size_t n) {
    uint64_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint64_t v;
        __builtin_memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32 ^ 0xFFFFFFFFu;
}
#endif

uint32_t navd_crc32c(const void *data, size_t n) {
#if defined(__x86_64__)
    static int has_sse42 = -1;
    if (has_sse42 < 0) has_sse42 = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    if (has_sse42) return crc32c_sse42((const unsigned char *)data, n);
#endif
    return crc32c_table((const unsigned char *)data, n);
}
