// SQLite 3 (Debian libsqlite3-dev).
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro that casts -1 to a function pointer; Swift cannot import it.
static inline void (*cshim_sqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }
