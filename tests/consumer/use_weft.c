/* A program outside weft that uses its installed API: the consumer checks
 * (run.sh) build it against an installed copy and a subdirectory copy. */
#include <stdio.h>
#include <string.h>

#include <weft.h>

int main(void)
{
    const char *msg = weft_strerror(WEFT_EINVAL);
    const char *name = weft_err_name(WEFT_EINVAL);

    if (strcmp(name, "EINVAL") != 0 || strcmp(msg, "invalid argument") != 0) {
        fprintf(stderr, "use_weft: got %s \"%s\"\n", name, msg);
        return 1;
    }
    printf("use_weft: weft %d.%d.%d, %s: %s\n", WEFT_VERSION_MAJOR,
           WEFT_VERSION_MINOR, WEFT_VERSION_PATCH, name, msg);
    return 0;
}
