/* Helpers the blocking-wait tests share (test_io_fd.c, test_io_blocking.c):
 * MS and a non-blocking pipe. Include after wtest.h and sched_util.h. */
#ifndef WEFT_TEST_IO_UTIL_H
#define WEFT_TEST_IO_UTIL_H

#define MS 1000000ull

static inline void make_pipe(int fd[2])
{
    WT_ASSERT_EQ(pipe2(fd, O_NONBLOCK | O_CLOEXEC), 0);
}

#endif
