/*
 * weft.hpp: weft's C++ face, header-only, C++17, over the C API of
 * weft.h (which it includes): schedulers and graphs with RAII, tasks from
 * any callable (small captures stored without allocation), precede and
 * succeed, conditions and multi-conditions, modules, subflows, runs, priorities and pins, the sync
 * primitives and a typed channel, parallel loops on iterators, waits for
 * descriptors and children, blocking calls, dependent async tasks with
 * futures, pipelines, task groups, and transform, scans, sorts and
 * find_if on iterators.
 *
 * Errors are codes, as in C: every call that can fail returns a
 * std::error_code in weft's category (weft::errc, weft::category()), the
 * same with and without exceptions (-fno-exceptions), and weft.hpp never
 * throws one of its own; weft::throw_if turns one into a
 * std::system_error where exceptions are wanted. An exception thrown by
 * a task's callable never unwinds through weft's C frames: a graph task
 * that throws fails (its run reports it; graph::exception gives it), a
 * loop body's or a blocking call's exception is thrown again on the
 * caller, and a spawned task's calls std::terminate.
 * See docs/reference/cpp.md for the whole story.
 *
 * One part per topic, each includable after weft.h alone: base (errors,
 * durations, config, how callables are stored), sched (schedulers,
 * binding, spawn, the calling thread's calls, descriptor and child
 * waits), sync (event, mutex, condition variable, wait group, semaphore,
 * channel<T>), task and subflow (what graph tasks and subflows share,
 * and subflows), graph (graphs and their runs), flow (dependent async,
 * pipelines, task groups), parallel (loops, reduce, transform, scans,
 * find_if), sort (the two sorts, over parallel's loops).
 */
#ifndef WEFT_HPP
#define WEFT_HPP

#include "weft.h"

#include "weft/cpp/base.hpp"
#include "weft/cpp/sched.hpp"
#include "weft/cpp/sync.hpp"
#include "weft/cpp/task.hpp"
#include "weft/cpp/subflow.hpp"
#include "weft/cpp/graph.hpp"
#include "weft/cpp/flow.hpp"
#include "weft/cpp/parallel.hpp"
#include "weft/cpp/sort.hpp"

#endif /* WEFT_HPP */
