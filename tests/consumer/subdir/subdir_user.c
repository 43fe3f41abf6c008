/* A vendoring project's code. It is fine under this project's -Wall but
 * warns under -Wshadow and -Wstrict-prototypes, so it only compiles if
 * weft's private warning flags did not leak into it. */
#include <stdio.h>
#include <string.h>

#include <weft.h>

static int count = 2;

static int old_style();         /* -Wstrict-prototypes */

static int old_style(void)
{
    int count = 1;              /* -Wshadow */
    return count;
}

int main(void)
{
    if (strcmp(weft_err_name(WEFT_EINVAL), "EINVAL") != 0)
        return 1;
    printf("subdir_user: %s (%d)\n", weft_strerror(WEFT_EINVAL), old_style() + count);
    return 0;
}
