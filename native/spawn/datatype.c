/* datatype.c - sizes of datatypes, and copying a message from the sender's
 * buffer to the receiver's.
 *
 * Contiguous on both sides (every predefined type, contiguous derived
 * types): one memcpy from buffer to buffer.  Otherwise the real MPI packs
 * and unpacks (MPI_Pack / MPI_Unpack on MPI_COMM_SELF), through a
 * temporary buffer only when both sides are non-contiguous.  A message
 * is a byte string of count * MPI_Type_size bytes, so the receiver's type
 * may differ from the sender's as MPI allows (same type signature). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The predefined types programs use most, with their sizes: a lookup
 * without a call into MPI on the message path. */
#define KNOWN 16
static struct {
    MPI_Datatype type;
    int size;
} known[KNOWN];
static int nknown;
static pthread_once_t known_once = PTHREAD_ONCE_INIT;

static void known_init(void)
{
    const MPI_Datatype types[] = {MPI_BYTE, MPI_CHAR, MPI_INT, MPI_DOUBLE, MPI_LONG, MPI_UNSIGNED,
                                  MPI_FLOAT, MPI_LONG_LONG, MPI_UNSIGNED_LONG, MPI_SHORT, MPI_UNSIGNED_CHAR,
                                  MPI_INT64_T, MPI_UINT64_T, MPI_INT32_T, MPI_UINT32_T, MPI_PACKED};
    for (size_t i = 0; i < sizeof types / sizeof types[0] && nknown < KNOWN; i++) {
        int size;
        if (PMPI_Type_size(types[i], &size) == MPI_SUCCESS) {
            known[nknown].type = types[i];
            known[nknown].size = size;
            nknown++;
        }
    }
}

int tlsp_type_info(MPI_Datatype t, tlsp_typeinfo *out)
{
    pthread_once(&known_once, known_init);
    for (int i = 0; i < nknown; i++)
        if (known[i].type == t) {
            out->size = known[i].size;
            out->contiguous = 1;
            out->extent = known[i].size;
            return MPI_SUCCESS;
        }
    int size;
    MPI_Aint lb, extent, tlb, textent;
    int rc = PMPI_Type_size(t, &size);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_get_extent(t, &lb, &extent);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_get_true_extent(t, &tlb, &textent);
    if (rc != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    out->size = size;
    out->extent = extent;
    out->contiguous = lb == 0 && tlb == 0 && extent == size && textent == size;
    return MPI_SUCCESS;
}

static size_t buf_bytes(const tlsp_buf *b, const tlsp_typeinfo *ti)
{
    return (size_t)b->count * (size_t)ti->size;
}

int tlsp_pack(const tlsp_buf *src, void *out, size_t bytes)
{
    tlsp_typeinfo ti;
    if (tlsp_type_info(src->type, &ti) != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    if (ti.contiguous) {
        if (bytes)
            memcpy(out, src->buf, bytes);
        return MPI_SUCCESS;
    }
    int pos = 0;
    return PMPI_Pack(src->buf, src->count, src->type, out, (int)bytes, &pos, MPI_COMM_SELF);
}

int tlsp_copy(const tlsp_buf *src, size_t bytes, const tlsp_buf *dst, size_t dst_bytes)
{
    tlsp_typeinfo si, di;
    if (tlsp_type_info(src->type, &si) != MPI_SUCCESS || tlsp_type_info(dst->type, &di) != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    int rc = MPI_SUCCESS;
    size_t n = bytes;
    if (n > dst_bytes) {
        n = dst_bytes;
        rc = MPI_ERR_TRUNCATE;
    }
    if (n == 0)
        return rc;
    if (si.contiguous && di.contiguous) {
        memcpy(dst->buf, src->buf, n);
        return rc;
    }
    /* Whole elements of the receiver's type only. */
    int elements = di.size ? (int)(n / (size_t)di.size) : 0;
    if (!si.contiguous && di.contiguous && n == bytes) {
        int pos = 0;
        int prc = PMPI_Pack(src->buf, src->count, src->type, dst->buf, (int)n, &pos, MPI_COMM_SELF);
        return prc != MPI_SUCCESS ? prc : rc;
    }
    const void *packed = src->buf;
    void *tmp = NULL;
    if (!si.contiguous) {
        tmp = malloc(bytes);
        if (!tmp)
            return MPI_ERR_NO_MEM;
        int prc = tlsp_pack(src, tmp, bytes);
        if (prc != MPI_SUCCESS) {
            free(tmp);
            return prc;
        }
        packed = tmp;
    }
    if (di.contiguous) {
        memcpy(dst->buf, packed, n);
    } else {
        int pos = 0;
        int urc = PMPI_Unpack(packed, (int)n, &pos, dst->buf, elements, dst->type, MPI_COMM_SELF);
        if (urc != MPI_SUCCESS)
            rc = urc;
    }
    free(tmp);
    return rc;
}

long tlsp_buf_bytes(const tlsp_buf *b, int *err)
{
    tlsp_typeinfo ti;
    if (b->count < 0) {
        *err = MPI_ERR_COUNT;
        return -1;
    }
    if (tlsp_type_info(b->type, &ti) != MPI_SUCCESS) {
        *err = MPI_ERR_TYPE;
        return -1;
    }
    return (long)buf_bytes(b, &ti);
}

int tlsp_copy_local(const tlsp_buf *src, const tlsp_buf *dst)
{
    int err = MPI_SUCCESS;
    long sb = tlsp_buf_bytes(src, &err);
    if (sb < 0)
        return err;
    long db = tlsp_buf_bytes(dst, &err);
    if (db < 0)
        return err;
    return tlsp_copy(src, (size_t)sb, dst, (size_t)db);
}

/* MPI_Pack and friends take a communicator only to know the peers'
 * data representation: inside a process it is the process's own. */
static MPI_Comm pack_comm(MPI_Comm comm, int *bad)
{
    tlsp_view *v = tlsp_view_of(comm, bad);
    return v ? MPI_COMM_SELF : comm;
}

TLSP_EXPORT int MPI_Pack(const void *inbuf, int incount, MPI_Datatype t, void *outbuf, int outsize, int *position,
                         MPI_Comm comm)
{
    int bad;
    MPI_Comm c = pack_comm(comm, &bad);
    if (bad)
        return tlsp_bad_comm(comm, "MPI_Pack");
    return PMPI_Pack(inbuf, incount, t, outbuf, outsize, position, c);
}

TLSP_EXPORT int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount, MPI_Datatype t,
                           MPI_Comm comm)
{
    int bad;
    MPI_Comm c = pack_comm(comm, &bad);
    if (bad)
        return tlsp_bad_comm(comm, "MPI_Unpack");
    return PMPI_Unpack(inbuf, insize, position, outbuf, outcount, t, c);
}

TLSP_EXPORT int MPI_Pack_size(int incount, MPI_Datatype t, MPI_Comm comm, int *size)
{
    int bad;
    MPI_Comm c = pack_comm(comm, &bad);
    if (bad)
        return tlsp_bad_comm(comm, "MPI_Pack_size");
    return PMPI_Pack_size(incount, t, c, size);
}
