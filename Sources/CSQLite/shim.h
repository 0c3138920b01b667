#ifndef NAVD_CSQLITE_SHIM_H
#define NAVD_CSQLITE_SHIM_H
#include <sqlite3.h>
/// SQLITE_TRANSIENT as a function: the macro is a cast Swift cannot import.
static inline void navsql_bind_text(sqlite3_stmt *s, int i, const char *text, int n) {
    sqlite3_bind_text(s, i, text, n, SQLITE_TRANSIENT);
}
#endif
