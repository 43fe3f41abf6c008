/* A child for test_proc_win.c: what weft_proc_spawn gave it, written to
 * its stdout. "args ...": each argument on a line; "cat": stdin copied;
 * "env NAME": the variable's value; "cwd": the directory; "sleep": a
 * minute asleep. Exits with argc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <windows.h>

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (!strcmp(what, "args")) {
        for (int i = 2; i < argc; i++)
            printf("[%s]\n", argv[i]);
    } else if (!strcmp(what, "cat")) {
        int c;
        while ((c = getchar()) != EOF)
            putchar(c);
    } else if (!strcmp(what, "env") && argc > 2) {
        const char *v = getenv(argv[2]);
        printf("%s\n", v ? v : "(none)");
    } else if (!strcmp(what, "cwd")) {
        char d[MAX_PATH];
        printf("%s\n", GetCurrentDirectoryA(sizeof d, d) ? d : "(none)");
    } else if (!strcmp(what, "sleep")) {
        Sleep(60000);
    }
    fflush(stdout);
    return argc;
}
