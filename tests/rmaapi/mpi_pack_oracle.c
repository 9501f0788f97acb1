/* mpi_pack_oracle: builds derived datatypes with a real MPI and reports what
 * MPI says about them, for librma's datatype differential test.
 *
 * Usage: mpi_pack_oracle <cases-file> <results-file>
 *
 * Each line of the cases file is one case:
 *     <id> <count> <seed> <type>
 * where <type> is a prefix expression (tokens separated by spaces):
 *     P <name>                          predefined (INT, DOUBLE, SHORT_INT, ...)
 *     C <n> <type>                      MPI_Type_contiguous
 *     V <n> <blocklength> <stride> <type>
 *     HV <n> <blocklength> <stride-bytes> <type>
 *     I <n> <bl_1..bl_n> <d_1..d_n> <type>
 *     HI <n> <bl_1..bl_n> <d_1..d_n bytes> <type>
 *     IB <n> <blocklength> <d_1..d_n> <type>
 *     HIB <n> <blocklength> <d_1..d_n bytes> <type>
 *     S <n> (<bl> <d bytes> <type>) x n
 *     SA <ndims> <C|F> <sizes..> <subsizes..> <starts..> <type>
 *     DA <size> <rank> <ndims> <C|F> <gsizes..> <distribs (B|C|N)..> <dargs.. (-1 = default)>
 *        <psizes..> <type>               MPI_Type_create_darray
 *     R <lb> <extent> <type>            MPI_Type_create_resized
 *     D <type>                          MPI_Type_dup
 * For each case the results file gets three lines:
 *     <id> <size> <lb> <extent> <true_lb> <true_extent> <packed-bytes> <lo> <hi>
 *     <hex of MPI_Pack of count elements of a buffer filled with pattern(seed)>
 *     <hex of the buffer [lo, hi) after MPI_Unpack of pattern(seed ^ 0x5555)
 *      into zeroes>
 * where [lo, hi) is the true extent of the count elements. Only MPI_Init,
 * the type constructors, MPI_Pack and MPI_Unpack are used; MPICH runs this as a
 * singleton without mpiexec. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char* g_tok; /* strtok_r state */

static char* next_token(void) {
  char* t = strtok_r(NULL, " \t\r\n", &g_tok);
  if (!t) {
    fprintf(stderr, "mpi_pack_oracle: unexpected end of type description\n");
    exit(2);
  }
  return t;
}
static long long next_int(void) { return strtoll(next_token(), NULL, 10); }

static MPI_Datatype predefined(const char* n) {
  static const struct { const char* name; MPI_Datatype type; } table[] = {
      {"CHAR", MPI_CHAR}, {"SIGNED_CHAR", MPI_SIGNED_CHAR}, {"UNSIGNED_CHAR", MPI_UNSIGNED_CHAR},
      {"BYTE", MPI_BYTE}, {"SHORT", MPI_SHORT}, {"UNSIGNED_SHORT", MPI_UNSIGNED_SHORT},
      {"INT", MPI_INT}, {"UNSIGNED", MPI_UNSIGNED}, {"LONG", MPI_LONG},
      {"UNSIGNED_LONG", MPI_UNSIGNED_LONG}, {"LONG_LONG", MPI_LONG_LONG},
      {"UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG}, {"FLOAT", MPI_FLOAT}, {"DOUBLE", MPI_DOUBLE},
      {"LONG_DOUBLE", MPI_LONG_DOUBLE}, {"INT8_T", MPI_INT8_T}, {"INT16_T", MPI_INT16_T},
      {"INT32_T", MPI_INT32_T}, {"INT64_T", MPI_INT64_T}, {"UINT8_T", MPI_UINT8_T},
      {"UINT16_T", MPI_UINT16_T}, {"UINT32_T", MPI_UINT32_T}, {"UINT64_T", MPI_UINT64_T},
      {"C_BOOL", MPI_C_BOOL}, {"C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX},
      {"C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX}, {"C_LONG_DOUBLE_COMPLEX", MPI_C_LONG_DOUBLE_COMPLEX},
      {"WCHAR", MPI_WCHAR}, {"AINT", MPI_AINT}, {"OFFSET", MPI_OFFSET},
      {"FLOAT_INT", MPI_FLOAT_INT}, {"DOUBLE_INT", MPI_DOUBLE_INT}, {"LONG_INT", MPI_LONG_INT},
      {"2INT", MPI_2INT}, {"SHORT_INT", MPI_SHORT_INT}, {"LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT},
  };
  for (size_t k = 0; k < sizeof table / sizeof table[0]; ++k) {
    if (strcmp(table[k].name, n) == 0) return table[k].type;
  }
  fprintf(stderr, "mpi_pack_oracle: unknown predefined type %s\n", n);
  exit(2);
}

static void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    fprintf(stderr, "mpi_pack_oracle: %s failed (%d)\n", what, rc);
    exit(3);
  }
}

static void* xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (!p) { fprintf(stderr, "mpi_pack_oracle: out of memory\n"); exit(4); }
  return p;
}

/* Parses one type; derived types it creates are freed by the caller's
 * MPI_Type_free of the result (MPI keeps the inner ones alive as needed). */
static MPI_Datatype parse_type(void) {
  const char* op = next_token();
  MPI_Datatype out = MPI_DATATYPE_NULL;
  if (strcmp(op, "P") == 0) return predefined(next_token());
  if (strcmp(op, "C") == 0) {
    int n = (int)next_int();
    MPI_Datatype t = parse_type();
    check(MPI_Type_contiguous(n, t, &out), "MPI_Type_contiguous");
  } else if (strcmp(op, "V") == 0 || strcmp(op, "HV") == 0) {
    int n = (int)next_int(), bl = (int)next_int();
    long long stride = next_int();
    MPI_Datatype t = parse_type();
    if (op[0] == 'V') check(MPI_Type_vector(n, bl, (int)stride, t, &out), "MPI_Type_vector");
    else check(MPI_Type_create_hvector(n, bl, (MPI_Aint)stride, t, &out), "MPI_Type_create_hvector");
  } else if (strcmp(op, "I") == 0 || strcmp(op, "HI") == 0) {
    int n = (int)next_int();
    int* bl = xmalloc(sizeof(int) * (size_t)n);
    int* d = xmalloc(sizeof(int) * (size_t)n);
    MPI_Aint* hd = xmalloc(sizeof(MPI_Aint) * (size_t)n);
    for (int k = 0; k < n; ++k) bl[k] = (int)next_int();
    for (int k = 0; k < n; ++k) { long long v = next_int(); d[k] = (int)v; hd[k] = (MPI_Aint)v; }
    MPI_Datatype t = parse_type();
    if (op[0] == 'I') check(MPI_Type_indexed(n, bl, d, t, &out), "MPI_Type_indexed");
    else check(MPI_Type_create_hindexed(n, bl, hd, t, &out), "MPI_Type_create_hindexed");
    free(bl); free(d); free(hd);
  } else if (strcmp(op, "IB") == 0 || strcmp(op, "HIB") == 0) {
    int n = (int)next_int(), bl = (int)next_int();
    int* d = xmalloc(sizeof(int) * (size_t)n);
    MPI_Aint* hd = xmalloc(sizeof(MPI_Aint) * (size_t)n);
    for (int k = 0; k < n; ++k) { long long v = next_int(); d[k] = (int)v; hd[k] = (MPI_Aint)v; }
    MPI_Datatype t = parse_type();
    if (op[0] == 'I') check(MPI_Type_create_indexed_block(n, bl, d, t, &out), "MPI_Type_create_indexed_block");
    else check(MPI_Type_create_hindexed_block(n, bl, hd, t, &out), "MPI_Type_create_hindexed_block");
    free(d); free(hd);
  } else if (strcmp(op, "S") == 0) {
    int n = (int)next_int();
    int* bl = xmalloc(sizeof(int) * (size_t)n);
    MPI_Aint* hd = xmalloc(sizeof(MPI_Aint) * (size_t)n);
    MPI_Datatype* ty = xmalloc(sizeof(MPI_Datatype) * (size_t)n);
    for (int k = 0; k < n; ++k) {
      bl[k] = (int)next_int();
      hd[k] = (MPI_Aint)next_int();
      ty[k] = parse_type();
    }
    check(MPI_Type_create_struct(n, bl, hd, ty, &out), "MPI_Type_create_struct");
    free(bl); free(hd); free(ty);
  } else if (strcmp(op, "SA") == 0) {
    int nd = (int)next_int();
    const char* order = next_token();
    int* s = xmalloc(sizeof(int) * (size_t)nd);
    int* u = xmalloc(sizeof(int) * (size_t)nd);
    int* st = xmalloc(sizeof(int) * (size_t)nd);
    for (int k = 0; k < nd; ++k) s[k] = (int)next_int();
    for (int k = 0; k < nd; ++k) u[k] = (int)next_int();
    for (int k = 0; k < nd; ++k) st[k] = (int)next_int();
    MPI_Datatype t = parse_type();
    check(MPI_Type_create_subarray(nd, s, u, st, order[0] == 'C' ? MPI_ORDER_C : MPI_ORDER_FORTRAN,
                                   t, &out), "MPI_Type_create_subarray");
    free(s); free(u); free(st);
  } else if (strcmp(op, "DA") == 0) {
    int size = (int)next_int(), rank = (int)next_int(), nd = (int)next_int();
    const char* order = next_token();
    int* g = xmalloc(sizeof(int) * (size_t)nd);
    int* di = xmalloc(sizeof(int) * (size_t)nd);
    int* da = xmalloc(sizeof(int) * (size_t)nd);
    int* ps = xmalloc(sizeof(int) * (size_t)nd);
    for (int k = 0; k < nd; ++k) g[k] = (int)next_int();
    for (int k = 0; k < nd; ++k) {
      const char* d = next_token();
      di[k] = d[0] == 'B' ? MPI_DISTRIBUTE_BLOCK : d[0] == 'C' ? MPI_DISTRIBUTE_CYCLIC : MPI_DISTRIBUTE_NONE;
    }
    for (int k = 0; k < nd; ++k) {
      int v = (int)next_int();
      da[k] = v < 0 ? MPI_DISTRIBUTE_DFLT_DARG : v;
    }
    for (int k = 0; k < nd; ++k) ps[k] = (int)next_int();
    MPI_Datatype t = parse_type();
    check(MPI_Type_create_darray(size, rank, nd, g, di, da, ps,
                                 order[0] == 'C' ? MPI_ORDER_C : MPI_ORDER_FORTRAN, t, &out),
          "MPI_Type_create_darray");
    free(g); free(di); free(da); free(ps);
  } else if (strcmp(op, "R") == 0) {
    MPI_Aint lb = (MPI_Aint)next_int(), ext = (MPI_Aint)next_int();
    MPI_Datatype t = parse_type();
    check(MPI_Type_create_resized(t, lb, ext, &out), "MPI_Type_create_resized");
  } else if (strcmp(op, "D") == 0) {
    MPI_Datatype t = parse_type();
    check(MPI_Type_dup(t, &out), "MPI_Type_dup");
  } else {
    fprintf(stderr, "mpi_pack_oracle: unknown constructor %s\n", op);
    exit(2);
  }
  return out;
}

/* The fill pattern; the test computes the same. */
static unsigned char pattern(uint64_t seed, uint64_t k) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + k * 0xBF58476D1CE4E5B9ull + 1;
  x ^= x >> 29;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 32;
  return (unsigned char)x;
}

static void write_hex(FILE* f, const unsigned char* p, long long n) {
  static const char digits[] = "0123456789abcdef";
  for (long long k = 0; k < n; ++k) {
    fputc(digits[p[k] >> 4], f);
    fputc(digits[p[k] & 15], f);
  }
  fputc('\n', f);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s <cases-file> <results-file>\n", argv[0]);
    return 2;
  }
  FILE* in = fopen(argv[1], "r");
  FILE* out = fopen(argv[2], "w");
  if (!in || !out) {
    perror("mpi_pack_oracle: open");
    return 2;
  }
  check(MPI_Init(&argc, &argv), "MPI_Init");
  static char line[1 << 20];
  while (fgets(line, sizeof line, in)) {
    char* id = strtok_r(line, " \t\r\n", &g_tok);
    if (!id) continue;
    long long count = next_int();
    uint64_t seed = strtoull(next_token(), NULL, 10);
    MPI_Datatype t = parse_type();
    MPI_Datatype committed = t;
    check(MPI_Type_commit(&committed), "MPI_Type_commit");
    MPI_Count size;
    MPI_Aint lb, ext, tlb, text;
    check(MPI_Type_size_x(committed, &size), "MPI_Type_size_x");
    check(MPI_Type_get_extent(committed, &lb, &ext), "MPI_Type_get_extent");
    check(MPI_Type_get_true_extent(committed, &tlb, &text), "MPI_Type_get_true_extent");
    long long lo = 0, hi = 0;
    if (size > 0 && count > 0) {
      long long span = (count - 1) * (long long)ext;
      lo = (long long)tlb + (span < 0 ? span : 0);
      hi = (long long)tlb + (long long)text + (span > 0 ? span : 0);
    }
    unsigned char* buf = xmalloc((size_t)(hi - lo));
    for (long long k = 0; k < hi - lo; ++k) buf[k] = pattern(seed, (uint64_t)k);
    long long packed_size = (long long)size * count;
    unsigned char* packed = xmalloc((size_t)packed_size);
    int pos = 0;
    check(MPI_Pack(buf - lo, (int)count, committed, packed, (int)packed_size, &pos, MPI_COMM_WORLD),
          "MPI_Pack");
    fprintf(out, "%s %lld %lld %lld %lld %lld %d %lld %lld\n", id, (long long)size, (long long)lb,
            (long long)ext, (long long)tlb, (long long)text, pos, lo, hi);
    write_hex(out, packed, pos);
    for (long long k = 0; k < packed_size; ++k) packed[k] = pattern(seed ^ 0x5555u, (uint64_t)k);
    memset(buf, 0, (size_t)(hi - lo));
    pos = 0;
    check(MPI_Unpack(packed, (int)packed_size, &pos, buf - lo, (int)count, committed, MPI_COMM_WORLD),
          "MPI_Unpack");
    write_hex(out, buf, hi - lo);
    free(buf);
    free(packed);
    /* Types are not freed: MPICH 4.0 reuses a freed handle for the next
     * type and then sometimes packs with stale cached information. */
  }
  fclose(in);
  if (fclose(out) != 0) {
    perror("mpi_pack_oracle: write");
    return 2;
  }
  MPI_Finalize();
  return 0;
}
