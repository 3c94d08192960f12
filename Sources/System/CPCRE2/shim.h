// libpcre2-8 (Debian libpcre2-dev). pcre2.h names its functions by code unit width through
// macros Swift cannot expand: with the width set to 8 here, Swift calls the `_8` functions
// (pcre2_compile_8, pcre2_match_8, ...) that those macros name.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
