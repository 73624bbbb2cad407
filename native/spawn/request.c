/* request.c - completing requests: the library's, the real MPI's, or a mix
 * of both in one array (a thread task may talk to thread siblings and to
 * spawned processes at once). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

static int status_error_of(const tlsp_req *r)
{
    return r->st_error;
}

/* Writes r's outcome, frees it and nulls the handle; returns its error. */
static int finish(tlsp_req *r, MPI_Request *h, MPI_Status *st)
{
    int err = status_error_of(r);
    if (r->kind == TLSP_REQ_RECV)
        tlsp_status_fill(st, r->st_source, r->st_tag, err, r->st_bytes);
    else
        tlsp_status_fill(st, MPI_ANY_SOURCE, MPI_ANY_TAG, err, r->st_bytes);
    tlsp_req_free(r);
    *h = MPI_REQUEST_NULL;
    return err;
}

static int report(int errors_return, const char *call, int err)
{
    return tlsp_fail(errors_return, err, "%s: %s", call,
                     err == MPI_ERR_TRUNCATE ? "message truncated: the receive buffer is too small"
                                             : "the request failed");
}

static int bad_request(const char *call)
{
    return tlsp_fail(0, MPI_ERR_REQUEST, "%s: invalid request (a request of thread tasks that completed already)",
                     call);
}

TLSP_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *st)
{
    int bad;
    tlsp_req *r = tlsp_req_lookup(*request, &bad);
    if (TLSP_UNLIKELY(bad))
        return bad_request("MPI_Wait");
    if (TLSP_LIKELY(!r))
        return PMPI_Wait(request, st);
    tlsp_req_wait(r);
    int er = r->errors_return;
    int err = finish(r, request, st);
    return err == MPI_SUCCESS ? MPI_SUCCESS : report(er, "MPI_Wait", err);
}

TLSP_EXPORT int MPI_Test(MPI_Request *request, int *flag, MPI_Status *st)
{
    int bad;
    tlsp_req *r = tlsp_req_lookup(*request, &bad);
    if (TLSP_UNLIKELY(bad))
        return bad_request("MPI_Test");
    if (TLSP_LIKELY(!r))
        return PMPI_Test(request, flag, st);
    *flag = tlsp_req_done(r);
    if (!*flag)
        return MPI_SUCCESS;
    int er = r->errors_return;
    int err = finish(r, request, st);
    return err == MPI_SUCCESS ? MPI_SUCCESS : report(er, "MPI_Test", err);
}

TLSP_EXPORT int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *st)
{
    int bad;
    tlsp_req *r = tlsp_req_lookup(request, &bad);
    if (TLSP_UNLIKELY(bad))
        return bad_request("MPI_Request_get_status");
    if (TLSP_LIKELY(!r))
        return PMPI_Request_get_status(request, flag, st);
    *flag = tlsp_req_done(r);
    if (*flag)
        tlsp_status_fill(st, r->kind == TLSP_REQ_RECV ? r->st_source : MPI_ANY_SOURCE,
                         r->kind == TLSP_REQ_RECV ? r->st_tag : MPI_ANY_TAG, r->st_error, r->st_bytes);
    return MPI_SUCCESS;
}

/* A pending request of thread tasks is referenced by its peer until the
 * peer completes it: it can be freed only once complete. */
TLSP_EXPORT int MPI_Request_free(MPI_Request *request)
{
    int bad;
    tlsp_req *r = tlsp_req_lookup(*request, &bad);
    if (TLSP_UNLIKELY(bad))
        return bad_request("MPI_Request_free");
    if (TLSP_LIKELY(!r))
        return PMPI_Request_free(request);
    if (!tlsp_req_done(r))
        return tlsp_refuse(NULL, "MPI_Request_free of a pending request");
    tlsp_req_free(r);
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Cancel(MPI_Request *request)
{
    int bad;
    tlsp_req *r = tlsp_req_lookup(*request, &bad);
    if (TLSP_UNLIKELY(bad))
        return bad_request("MPI_Cancel");
    if (TLSP_LIKELY(!r))
        return PMPI_Cancel(request);
    return tlsp_refuse(NULL, "MPI_Cancel");
}

TLSP_EXPORT int MPI_Start(MPI_Request *request)
{
    int bad;
    tlsp_req *r = tlsp_req_lookup(*request, &bad);
    if (TLSP_UNLIKELY(bad || r))
        return bad_request("MPI_Start");
    return PMPI_Start(request);
}

TLSP_EXPORT int MPI_Startall(int count, MPI_Request requests[])
{
    for (int i = 0; i < count; i++) {
        int bad;
        if (tlsp_req_lookup(requests[i], &bad) || bad)
            return bad_request("MPI_Startall");
    }
    return PMPI_Startall(count, requests);
}

/* ------------------------------------------------------- request arrays */

enum { EL_NULL = 0, EL_OURS, EL_REAL };

/* Classifies the array: -1 on a stale library handle; else how many of
 * the library's requests it holds. */
static int classify(int count, const MPI_Request *reqs)
{
    int ours = 0;
    for (int i = 0; i < count; i++) {
        int bad;
        if (tlsp_req_lookup(reqs[i], &bad))
            ours++;
        if (bad)
            return -1;
    }
    return ours;
}

static MPI_Status *status_at(MPI_Status *statuses, int i)
{
    return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

/* Tries element i: 1 when it completed now (status written, handle
 * nulled), 0 when still pending, -1 when inactive (null). *err gets its
 * error code; *er its error handler. */
static int try_one(MPI_Request *h, MPI_Status *st, int *err, int *er)
{
    int bad;
    *err = MPI_SUCCESS;
    if (*h == MPI_REQUEST_NULL)
        return -1;
    tlsp_req *r = tlsp_req_lookup(*h, &bad);
    if (r) {
        if (!tlsp_req_done(r))
            return 0;
        *er = r->errors_return;
        *err = finish(r, h, st);
        return 1;
    }
    int flag = 0;
    MPI_Status local;
    *err = PMPI_Test(h, &flag, st == MPI_STATUS_IGNORE ? &local : st);
    return flag || *err != MPI_SUCCESS;
}

/* Waiting on several kinds at once is polling: yield between rounds, then
 * sleep a little, so a long wait does not burn a CPU. */
static void backoff(unsigned round)
{
    if (round < 64) {
        sched_yield();
    } else {
        struct timespec ts = {0, round < 1024 ? 20000 : 200000};
        nanosleep(&ts, NULL);
    }
}

static int all_done_or_error(const char *call, int count, MPI_Request reqs[], MPI_Status *statuses, int blocking,
                             int *flag)
{
    int ours = classify(count, reqs);
    if (ours < 0)
        return bad_request(call);
    int failed = 0, er = 0;
    int *errs = NULL;
    if (statuses != MPI_STATUSES_IGNORE) {
        errs = calloc((size_t)(count ? count : 1), sizeof *errs);
        if (!errs)
            return tlsp_fail(0, MPI_ERR_NO_MEM, "%s: out of memory", call);
    }
    if (!blocking) {
        /* MPI_Testall completes nothing unless everything is complete. */
        for (int i = 0; i < count; i++) {
            int bad;
            tlsp_req *r = tlsp_req_lookup(reqs[i], &bad);
            if (r && !tlsp_req_done(r)) {
                *flag = 0;
                free(errs);
                return MPI_SUCCESS;
            }
        }
        int real_left = 0;
        for (int i = 0; i < count; i++) {
            int bad;
            if (reqs[i] != MPI_REQUEST_NULL && !tlsp_req_lookup(reqs[i], &bad))
                real_left = 1;
        }
        if (real_left) {
            /* Ask the real MPI about its part without completing it. */
            for (int i = 0; i < count; i++) {
                int bad, f = 1;
                if (reqs[i] != MPI_REQUEST_NULL && !tlsp_req_lookup(reqs[i], &bad))
                    PMPI_Request_get_status(reqs[i], &f, MPI_STATUS_IGNORE);
                if (!f) {
                    *flag = 0;
                    free(errs);
                    return MPI_SUCCESS;
                }
            }
        }
    }
    int left = 0;
    for (int i = 0; i < count; i++)
        if (reqs[i] != MPI_REQUEST_NULL)
            left++;
        else
            tlsp_status_empty(status_at(statuses, i));
    for (unsigned round = 0; left; round++) {
        int progress = 0;
        for (int i = 0; i < count; i++) {
            if (reqs[i] == MPI_REQUEST_NULL)
                continue;
            int bad, err, e = 0;
            tlsp_req *r = tlsp_req_lookup(reqs[i], &bad);
            if (r && ours == left) /* only ours left: block on each in turn */
                tlsp_req_wait(r);
            int done = try_one(&reqs[i], status_at(statuses, i), &err, &e);
            if (done == 1) {
                left--;
                progress = 1;
                if (r)
                    ours--;
                if (errs)
                    errs[i] = err;
                if (err != MPI_SUCCESS) {
                    failed = 1;
                    er |= e;
                }
            }
        }
        if (!progress && left)
            backoff(round);
    }
    if (flag)
        *flag = 1;
    if (failed && errs)
        for (int i = 0; i < count; i++)
            statuses[i].MPI_ERROR = errs[i];
    free(errs);
    return failed ? tlsp_fail(er, MPI_ERR_IN_STATUS, "%s: a request failed (see the statuses)", call) : MPI_SUCCESS;
}

TLSP_EXPORT int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status statuses[])
{
    int ours = classify(count, reqs);
    if (TLSP_LIKELY(ours == 0))
        return PMPI_Waitall(count, reqs, statuses);
    return all_done_or_error("MPI_Waitall", count, reqs, statuses, 1, NULL);
}

TLSP_EXPORT int MPI_Testall(int count, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    int ours = classify(count, reqs);
    if (TLSP_LIKELY(ours == 0))
        return PMPI_Testall(count, reqs, flag, statuses);
    return all_done_or_error("MPI_Testall", count, reqs, statuses, 0, flag);
}

static int any_call(const char *call, int count, MPI_Request reqs[], int *index, MPI_Status *st, int blocking,
                    int *flag)
{
    if (classify(count, reqs) < 0)
        return bad_request(call);
    for (unsigned round = 0;; round++) {
        int active = 0;
        for (int i = 0; i < count; i++) {
            int err, er = 0;
            int done = try_one(&reqs[i], st, &err, &er);
            if (done < 0)
                continue;
            active = 1;
            if (done) {
                *index = i;
                if (flag)
                    *flag = 1;
                return err == MPI_SUCCESS ? MPI_SUCCESS : report(er, call, err);
            }
        }
        if (!active) {
            *index = MPI_UNDEFINED;
            if (flag)
                *flag = 1;
            tlsp_status_empty(st);
            return MPI_SUCCESS;
        }
        if (!blocking) {
            *index = MPI_UNDEFINED;
            *flag = 0;
            return MPI_SUCCESS;
        }
        backoff(round);
    }
}

TLSP_EXPORT int MPI_Waitany(int count, MPI_Request reqs[], int *index, MPI_Status *st)
{
    if (TLSP_LIKELY(classify(count, reqs) == 0))
        return PMPI_Waitany(count, reqs, index, st);
    return any_call("MPI_Waitany", count, reqs, index, st, 1, NULL);
}

TLSP_EXPORT int MPI_Testany(int count, MPI_Request reqs[], int *index, int *flag, MPI_Status *st)
{
    if (TLSP_LIKELY(classify(count, reqs) == 0))
        return PMPI_Testany(count, reqs, index, flag, st);
    return any_call("MPI_Testany", count, reqs, index, st, 0, flag);
}

static int some_call(const char *call, int count, MPI_Request reqs[], int *outcount, int indices[],
                     MPI_Status statuses[], int blocking)
{
    if (classify(count, reqs) < 0)
        return bad_request(call);
    int failed = 0, er = 0;
    for (unsigned round = 0;; round++) {
        int active = 0, n = 0;
        for (int i = 0; i < count; i++) {
            int err, e = 0;
            int done = try_one(&reqs[i], status_at(statuses, n), &err, &e);
            if (done < 0)
                continue;
            active = 1;
            if (done) {
                if (statuses != MPI_STATUSES_IGNORE)
                    statuses[n].MPI_ERROR = err;
                indices[n++] = i;
                if (err != MPI_SUCCESS) {
                    failed = 1;
                    er |= e;
                }
            }
        }
        if (!active) {
            *outcount = MPI_UNDEFINED;
            return MPI_SUCCESS;
        }
        if (n || !blocking) {
            *outcount = n;
            return failed ? tlsp_fail(er, MPI_ERR_IN_STATUS, "%s: a request failed (see the statuses)", call)
                          : MPI_SUCCESS;
        }
        backoff(round);
    }
}

TLSP_EXPORT int MPI_Waitsome(int count, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
    if (TLSP_LIKELY(classify(count, reqs) == 0))
        return PMPI_Waitsome(count, reqs, outcount, indices, statuses);
    return some_call("MPI_Waitsome", count, reqs, outcount, indices, statuses, 1);
}

TLSP_EXPORT int MPI_Testsome(int count, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
    if (TLSP_LIKELY(classify(count, reqs) == 0))
        return PMPI_Testsome(count, reqs, outcount, indices, statuses);
    return some_call("MPI_Testsome", count, reqs, outcount, indices, statuses, 0);
}
