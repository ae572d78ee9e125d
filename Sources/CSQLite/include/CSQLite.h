// The system's SQLite 3 (libsqlite3), for the daemon's queue. A shim because Swift cannot use
// SQLITE_TRANSIENT (a macro casting -1 to a function pointer).
#ifndef CSQLITE_H
#define CSQLITE_H
#include <sqlite3.h>

/// Binds `text` (NUL-terminated) to parameter `index`; SQLite copies it.
int rfsql_bind_text(sqlite3_stmt *statement, int index, const char *text);

#endif
