/* Error codes: one table behind the codes, weft_strerror and weft_err_name. */
#include "weft.h"
#include "wtest.h"

WT_TEST(errors, every_code_has_a_distinct_message_and_name)
{
    int codes[] = {
#define X(name, value, msg) WEFT_##name,
        WEFT_ERRNO_MAP(X)
#undef X
    };
    size_t n = sizeof codes / sizeof codes[0];
    WT_ASSERT_EQ(n, 13);
    for (size_t i = 0; i < n; i++) {
        WT_ASSERT(codes[i] < 0, "codes are negative");
        WT_ASSERT(strcmp(weft_strerror(codes[i]), "unknown error") != 0);
        WT_ASSERT(strcmp(weft_err_name(codes[i]), "UNKNOWN") != 0);
        for (size_t j = 0; j < i; j++) {
            WT_ASSERT(codes[i] != codes[j]);
            WT_ASSERT(strcmp(weft_strerror(codes[i]), weft_strerror(codes[j])) != 0);
        }
    }
    WT_ASSERT(strcmp(weft_err_name(WEFT_ECYCLE), "ECYCLE") == 0);
    WT_ASSERT(strcmp(weft_strerror(WEFT_OK), "success") == 0);
    WT_ASSERT(strcmp(weft_strerror(12345), "unknown error") == 0);
    WT_ASSERT(strcmp(weft_err_name(-999), "UNKNOWN") == 0);
}

/* The contract has the codes as macros: `#ifdef WEFT_ECYCLE` in user code
 * must see them. A code added to the table makes the count above fail
 * until its macro is added here and in weft.h. */
WT_TEST(errors, every_code_is_also_a_macro)
{
    int macros = 0;
#ifdef WEFT_OK
    macros++;
#endif
#ifdef WEFT_EINVAL
    macros++;
#endif
#ifdef WEFT_ENOMEM
    macros++;
#endif
#ifdef WEFT_EBUSY
    macros++;
#endif
#ifdef WEFT_ECYCLE
    macros++;
#endif
#ifdef WEFT_ECANCELED
    macros++;
#endif
#ifdef WEFT_ETIMEDOUT
    macros++;
#endif
#ifdef WEFT_ECLOSED
    macros++;
#endif
#ifdef WEFT_EAGAIN
    macros++;
#endif
#ifdef WEFT_ENOTBOUND
    macros++;
#endif
#ifdef WEFT_ESHUTDOWN
    macros++;
#endif
#ifdef WEFT_EIO
    macros++;
#endif
#ifdef WEFT_EFAILED
    macros++;
#endif
#ifdef WEFT_ENOEXEC
    macros++;
#endif
    WT_ASSERT_EQ(macros, 14);   /* WEFT_OK and the thirteen of WEFT_ERRNO_MAP */
    /* Still the enum's values. */
    WT_ASSERT_EQ(WEFT_OK, 0);
    WT_ASSERT_EQ(WEFT_ECYCLE, -4);
    WT_ASSERT_EQ(WEFT_ESHUTDOWN, -10);
    WT_ASSERT_EQ(WEFT_EIO, -11);
    WT_ASSERT_EQ(WEFT_EFAILED, -12);
    WT_ASSERT_EQ(WEFT_ENOEXEC, -13);
}
