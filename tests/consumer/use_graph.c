/* A program that includes a topic header directly, <weft/graph.h>, rather
 * than the umbrella <weft.h>: run.sh builds it through every way of
 * using an installed or vendored weft (find_package, pkg-config,
 * add_subdirectory) and runs it. It builds a two-task graph and checks
 * its shape; running it would need <weft/sched.h> as well.
 * Results are compared with 0, not WEFT_OK: graph.h does not include
 * <weft/errors.h> today. */
#include <stdio.h>

#include <weft/graph.h>

static void step(void *arg)
{
    (void)arg;
}

int main(void)
{
    weft_graph *g = NULL;
    weft_task *a, *b;

    if (weft_graph_create(&g) != 0)
        return 1;
    a = weft_graph_add(g, step, NULL);
    b = weft_graph_add(g, step, NULL);
    if (a == NULL || b == NULL || weft_task_precede(a, b) != 0 ||
        weft_graph_size(g) != 2) {
        fprintf(stderr, "use_graph: the graph did not build\n");
        return 1;
    }
    if (weft_graph_destroy(g) != 0)
        return 1;
    printf("use_graph: a two-task graph through <weft/graph.h> alone\n");
    return 0;
}
