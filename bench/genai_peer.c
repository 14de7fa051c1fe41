/* genai_peer: ONNX Runtime's greedy decode loop on a GenAI-style decoder (bench/make_genai.py), the way
 * onnxruntime-genai runs it with WebGPU graph capture: a static max-length KV buffer shared by past and
 * present, a static attention mask, the per-step values written to bound GPU tensors.
 *
 *   genai_peer MODEL --max-len M [--ep webgpu|cpu] [--capture] [--steps N] [--past-start P0] [--start-token T]
 *              [--check-cpu] [--atol A] [--rtol R] [--ep-opt K=V]... [--threads N] [--lib PATH] [--json]
 *
 * Model I/O (bench/make_genai.py, the builder's names): input_ids int64 [1, 1], attention_mask int64
 * [1, total], past_key_values.N.key/.value float32 [1, kv_heads, past, head_size]; outputs logits
 * [1, 1, vocab] and present.N.key/.value. Other inputs are refused.
 *
 * webgpu: the session pins batch_size 1, sequence_length 1 and past/total_sequence_length M (free dimension
 * overrides, so every shape is static), enableInt64=1 (the mask's Cast from int64), enableGraphCapture=1 with
 * --capture. GPU tensors are made once with the session's WebGPU allocator: input_ids, the mask [1, M], one
 * KV buffer [1, kv_heads, M, head_size] per past (zeros), the logits. They are bound once: each past and its
 * present to the *same* tensor (ONNX Runtime's GroupQueryAttention then writes the new token's K/V in place,
 * at seqlens_k; graph capture requires it). Step k (past length P0 + k) writes input_ids and the mask (ones
 * for the first P0 + k + 1 positions, zeros after) with one CopyTensors call, runs RunWithBinding, reads the
 * logits back with CopyTensors and takes the greedy argmax (the first maximum) as the next token.
 * cpu: Run() with host tensors, each step's presents fed back as the next pasts (same shapes: the buffer).
 * A step's time covers the writes, the run, the logits readback and the argmax; ms per step is over steps
 * 2..N (step 1 includes shader compilation and, with capture, the capture run).
 * --check-cpu: the same loop again on the CPU EP, fed the same tokens; every step's logits compared
 * (|x - ref| <= atol + rtol |ref|) and the argmax.
 *
 * No ONNX Runtime header is used: the library is loaded with dlopen and the OrtApi table read as an array of
 * function pointers at the slot numbers of its C API (append-only, so they stay valid; CopyTensors is C API
 * version 23). The library: --lib, else $ORT_PEER_LIB, else .cache/onnxruntime-node-1.30.0/ beside the binary
 * (bench/.peer: what bench/compare's peer build fetches), else libonnxruntime.so.1 beside it (the bundle). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct OrtEnv OrtEnv;
typedef struct OrtStatus OrtStatus;
typedef struct OrtSession OrtSession;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtValue OrtValue;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtAllocator OrtAllocator;
typedef struct OrtIoBinding OrtIoBinding;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtTypeInfo OrtTypeInfo;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;
typedef void (*LogFn)(void*, int, const char*, const char*, const char*, const char*);

enum { T_FLOAT = 1, T_INT64 = 7 };
enum { DEVICE_ALLOCATOR = 0, ARENA_ALLOCATOR = 1 };

/* The OrtApi slots this harness calls (index into the function table). */
typedef struct {
  const char* (*GetErrorMessage)(const OrtStatus*);                                                      /* 2 */
  OrtStatus* (*CreateEnvWithCustomLogger)(LogFn, void*, int, const char*, OrtEnv**);                     /* 4 */
  OrtStatus* (*CreateSession)(const OrtEnv*, const char*, const OrtSessionOptions*, OrtSession**);       /* 7 */
  OrtStatus* (*Run)(OrtSession*, const OrtRunOptions*, const char* const*, const OrtValue* const*, size_t,
                    const char* const*, size_t, OrtValue**);                                              /* 9 */
  OrtStatus* (*CreateSessionOptions)(OrtSessionOptions**);                                               /* 10 */
  OrtStatus* (*SetSessionLogSeverityLevel)(OrtSessionOptions*, int);                                     /* 22 */
  OrtStatus* (*SetIntraOpNumThreads)(OrtSessionOptions*, int);                                           /* 24 */
  OrtStatus* (*SessionGetInputCount)(const OrtSession*, size_t*);                                        /* 30 */
  OrtStatus* (*SessionGetOutputCount)(const OrtSession*, size_t*);                                       /* 31 */
  OrtStatus* (*SessionGetInputTypeInfo)(const OrtSession*, size_t, OrtTypeInfo**);                       /* 33 */
  OrtStatus* (*SessionGetInputName)(const OrtSession*, size_t, OrtAllocator*, char**);                   /* 36 */
  OrtStatus* (*SessionGetOutputName)(const OrtSession*, size_t, OrtAllocator*, char**);                  /* 37 */
  OrtStatus* (*CreateRunOptions)(OrtRunOptions**);                                                       /* 39 */
  OrtStatus* (*CreateTensorAsOrtValue)(OrtAllocator*, const int64_t*, size_t, int, OrtValue**);          /* 48 */
  OrtStatus* (*GetTensorMutableData)(OrtValue*, void**);                                                 /* 51 */
  OrtStatus* (*CastTypeInfoToTensorInfo)(const OrtTypeInfo*, const OrtTensorTypeAndShapeInfo**);         /* 55 */
  OrtStatus* (*GetTensorElementType)(const OrtTensorTypeAndShapeInfo*, int*);                            /* 60 */
  OrtStatus* (*GetDimensionsCount)(const OrtTensorTypeAndShapeInfo*, size_t*);                           /* 61 */
  OrtStatus* (*GetDimensions)(const OrtTensorTypeAndShapeInfo*, int64_t*, size_t);                       /* 62 */
  OrtStatus* (*GetTensorTypeAndShape)(const OrtValue*, OrtTensorTypeAndShapeInfo**);                     /* 65 */
  OrtStatus* (*CreateMemoryInfo)(const char*, int, int, int, OrtMemoryInfo**);                           /* 68 */
  OrtStatus* (*GetAllocatorWithDefaultOptions)(OrtAllocator**);                                          /* 78 */
  void (*ReleaseStatus)(OrtStatus*);                                                                     /* 93 */
  void (*ReleaseSession)(OrtSession*);                                                                   /* 95 */
  void (*ReleaseValue)(OrtValue*);                                                                       /* 96 */
  void (*ReleaseTypeInfo)(OrtTypeInfo*);                                                                 /* 98 */
  void (*ReleaseTensorTypeAndShapeInfo)(OrtTensorTypeAndShapeInfo*);                                     /* 99 */
  void (*ReleaseSessionOptions)(OrtSessionOptions*);                                                     /* 100 */
  OrtStatus* (*AddFreeDimensionOverrideByName)(OrtSessionOptions*, const char*, int64_t);                /* 124 */
  OrtStatus* (*CreateAllocator)(const OrtSession*, const OrtMemoryInfo*, OrtAllocator**);                /* 131 */
  OrtStatus* (*RunWithBinding)(OrtSession*, const OrtRunOptions*, const OrtIoBinding*);                  /* 133 */
  OrtStatus* (*CreateIoBinding)(OrtSession*, OrtIoBinding**);                                            /* 134 */
  OrtStatus* (*BindInput)(OrtIoBinding*, const char*, const OrtValue*);                                  /* 136 */
  OrtStatus* (*BindOutput)(OrtIoBinding*, const char*, const OrtValue*);                                 /* 137 */
  OrtStatus* (*AppendExecutionProvider)(OrtSessionOptions*, const char*, const char* const*, const char* const*,
                                        size_t);                                                          /* 216 */
  OrtStatus* (*CopyTensors)(const OrtEnv*, const OrtValue* const*, OrtValue* const*, void*, size_t);     /* 386 */
} Api;
static Api api;

static const struct { int slot; size_t offset; } kSlots[] = {
#define S(n, f) {n, offsetof(Api, f)}
    S(2, GetErrorMessage), S(4, CreateEnvWithCustomLogger), S(7, CreateSession), S(9, Run), S(10, CreateSessionOptions),
    S(22, SetSessionLogSeverityLevel), S(24, SetIntraOpNumThreads), S(30, SessionGetInputCount),
    S(31, SessionGetOutputCount), S(33, SessionGetInputTypeInfo), S(36, SessionGetInputName),
    S(37, SessionGetOutputName), S(39, CreateRunOptions), S(48, CreateTensorAsOrtValue), S(51, GetTensorMutableData),
    S(55, CastTypeInfoToTensorInfo), S(60, GetTensorElementType), S(61, GetDimensionsCount), S(62, GetDimensions),
    S(65, GetTensorTypeAndShape), S(68, CreateMemoryInfo), S(78, GetAllocatorWithDefaultOptions), S(93, ReleaseStatus),
    S(95, ReleaseSession), S(96, ReleaseValue), S(98, ReleaseTypeInfo), S(99, ReleaseTensorTypeAndShapeInfo),
    S(100, ReleaseSessionOptions), S(124, AddFreeDimensionOverrideByName), S(131, CreateAllocator),
    S(133, RunWithBinding), S(134, CreateIoBinding), S(136, BindInput), S(137, BindOutput),
    S(216, AppendExecutionProvider), S(386, CopyTensors),
#undef S
};

static const char* g_version = "?";

static void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "genai_peer: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  printf("{\"ok\": false}\n");
  exit(2);
}

static void check(OrtStatus* st, const char* what) {
  if (!st) return;
  die("%s: %s", what, api.GetErrorMessage(st));
}

static void load(const char* lib) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) die("dlopen(%s): %s", lib, dlerror());
  typedef struct { const void* (*get_api)(uint32_t); const char* (*version)(void); } Base;
  const Base* (*get_base)(void) = (const Base* (*)(void))dlsym(h, "OrtGetApiBase");
  if (!get_base) die("%s has no OrtGetApiBase", lib);
  const Base* base = get_base();
  g_version = base->version();
  void* const* table = (void* const*)base->get_api(23);
  if (!table) die("ONNX Runtime %s does not offer C API version 23 (CopyTensors)", g_version);
  for (size_t i = 0; i < sizeof kSlots / sizeof kSlots[0]; i++) {
    if (!table[kSlots[i].slot]) die("OrtApi slot %d is NULL", kSlots[i].slot);
    memcpy((char*)&api + kSlots[i].offset, &table[kSlots[i].slot], sizeof(void*));
  }
}

/* ORT's log: warnings and errors echoed; the capture replays counted (logged at INFO, "Replaying the captured"). */
static long g_replays;
static int g_echo = 3;
static void on_log(void* p, int sev, const char* cat, const char* id, const char* loc, const char* msg) {
  (void)p, (void)cat, (void)id, (void)loc;
  if (msg && strstr(msg, "Replaying the captured")) g_replays++;
  if (sev >= g_echo) fprintf(stderr, "[ort:%c] %s\n", "VIWEF"[sev < 0 ? 0 : sev > 4 ? 4 : sev], msg ? msg : "");
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

#define MAXKV 512
typedef struct {
  int layers2;                     /* past inputs (2 per layer) */
  char* past[MAXKV];               /* past_key_values.N.x, in graph order */
  char* present[MAXKV];            /* present.N.x, paired by name */
  int64_t kv_heads, head_size, vocab;
} Io;

static OrtEnv* g_env;
static OrtAllocator* g_cpu;
static OrtRunOptions* g_ro;

typedef struct {
  int webgpu, capture, threads;
  int64_t max_len;
  int n_opt;
  const char* opt_k[32];
  const char* opt_v[32];
} Cfg;

static OrtSession* make_session(const char* model, const Cfg* c, int webgpu) {
  OrtSessionOptions* so;
  OrtSession* s;
  check(api.CreateSessionOptions(&so), "CreateSessionOptions");
  check(api.SetSessionLogSeverityLevel(so, webgpu && c->capture ? 1 : 2), "SetSessionLogSeverityLevel");
  if (c->threads > 0) check(api.SetIntraOpNumThreads(so, c->threads), "SetIntraOpNumThreads");
  /* Every shape static: one token, batch 1, the buffer's length. */
  check(api.AddFreeDimensionOverrideByName(so, "batch_size", 1), "AddFreeDimensionOverrideByName");
  check(api.AddFreeDimensionOverrideByName(so, "sequence_length", 1), "AddFreeDimensionOverrideByName");
  check(api.AddFreeDimensionOverrideByName(so, "past_sequence_length", c->max_len), "AddFreeDimensionOverrideByName");
  check(api.AddFreeDimensionOverrideByName(so, "total_sequence_length", c->max_len), "AddFreeDimensionOverrideByName");
  if (webgpu) {
    const char* k[40];
    const char* v[40];
    size_t n = 0;
    k[n] = "enableInt64", v[n++] = "1";
    if (c->capture) k[n] = "enableGraphCapture", v[n++] = "1";
    for (int i = 0; i < c->n_opt; i++) k[n] = c->opt_k[i], v[n++] = c->opt_v[i];
    check(api.AppendExecutionProvider(so, "WebGPU", k, v, n), "SessionOptionsAppendExecutionProvider(WebGPU)");
  }
  check(api.CreateSession(g_env, model, so, &s), "CreateSession");
  api.ReleaseSessionOptions(so);
  return s;
}

static void input_dims(OrtSession* s, size_t i, int64_t* dims, size_t* rank) {
  OrtTypeInfo* ti;
  const OrtTensorTypeAndShapeInfo* tsi;
  check(api.SessionGetInputTypeInfo(s, i, &ti), "SessionGetInputTypeInfo");
  check(api.CastTypeInfoToTensorInfo(ti, &tsi), "CastTypeInfoToTensorInfo");
  check(api.GetDimensionsCount(tsi, rank), "GetDimensionsCount");
  if (*rank > 8) die("input %zu has rank %zu", i, *rank);
  check(api.GetDimensions(tsi, dims, *rank), "GetDimensions");
  api.ReleaseTypeInfo(ti);
}

static Io model_io(OrtSession* s) {
  Io io;
  memset(&io, 0, sizeof io);
  size_t ni, no;
  check(api.SessionGetInputCount(s, &ni), "SessionGetInputCount");
  check(api.SessionGetOutputCount(s, &no), "SessionGetOutputCount");
  int have_ids = 0, have_mask = 0;
  for (size_t i = 0; i < ni; i++) {
    char* name;
    check(api.SessionGetInputName(s, i, g_cpu, &name), "SessionGetInputName");
    if (!strcmp(name, "input_ids")) have_ids = 1;
    else if (!strcmp(name, "attention_mask")) have_mask = 1;
    else if (!strncmp(name, "past_key_values.", 16)) {
      if (io.layers2 == MAXKV) die("more than %d past inputs", MAXKV);
      int64_t d[8];
      size_t r;
      input_dims(s, i, d, &r);
      if (r != 4) die("input '%s' has rank %zu, expected [batch, kv_heads, past, head_size]", name, r);
      io.kv_heads = d[1], io.head_size = d[3];
      const char* tail = name + 16; /* "N.key" */
      char want[256];
      snprintf(want, sizeof want, "present.%s", tail);
      io.past[io.layers2] = strdup(name);
      io.present[io.layers2++] = strdup(want);
    } else {
      die("input '%s' is not input_ids, attention_mask or past_key_values.N.key/value", name);
    }
  }
  if (!have_ids || !have_mask || !io.layers2) die("the model lacks input_ids, attention_mask or past_key_values.*");
  for (int k = 0; k < io.layers2; k++) {
    int found = 0;
    for (size_t j = 0; j < no && !found; j++) {
      char* name;
      check(api.SessionGetOutputName(s, j, g_cpu, &name), "SessionGetOutputName");
      found = !strcmp(name, io.present[k]);
    }
    if (!found) die("input '%s' has no output '%s'", io.past[k], io.present[k]);
  }
  return io;
}

static void* data_of(OrtValue* v) {
  void* p;
  check(api.GetTensorMutableData(v, &p), "GetTensorMutableData");
  return p;
}

static int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return best;
}

static void fill_mask(int64_t* mask, int64_t max_len, int64_t total) {
  for (int64_t i = 0; i < max_len; i++) mask[i] = i < total;
}

static int64_t g_vocab; /* the logits' last dim, found by the first loop */

typedef struct {
  int steps;
  int64_t past_start, start_token;
  int64_t* tokens; /* fed per step */
  float* logits;   /* [steps, vocab] */
  double* ms;
  double create_ms;
  long replays;
} Loop;

/* One greedy loop. forced: the tokens to feed (a reference loop), else start token then argmax. */
static void run_loop(const char* model, const Cfg* c, int webgpu, Loop* L, const int64_t* forced) {
  double t0 = now_ms();
  OrtSession* s = make_session(model, c, webgpu);
  L->create_ms = now_ms() - t0;
  Io io = model_io(s);
  const int64_t M = c->max_len;
  const int64_t kv_shape[4] = {1, io.kv_heads, M, io.head_size}, ids_shape[2] = {1, 1}, mask_shape[2] = {1, M};
  OrtValue *ids_h, *mask_h, *zeros_h;
  check(api.CreateTensorAsOrtValue(g_cpu, ids_shape, 2, T_INT64, &ids_h), "CreateTensorAsOrtValue(input_ids)");
  check(api.CreateTensorAsOrtValue(g_cpu, mask_shape, 2, T_INT64, &mask_h), "CreateTensorAsOrtValue(attention_mask)");
  check(api.CreateTensorAsOrtValue(g_cpu, kv_shape, 4, T_FLOAT, &zeros_h), "CreateTensorAsOrtValue(zero past)");
  memset(data_of(zeros_h), 0, sizeof(float) * (size_t)(io.kv_heads * M * io.head_size));
  int64_t* ids = data_of(ids_h);
  int64_t* mask = data_of(mask_h);
  long replays0 = g_replays;
  int64_t next = L->start_token;

  if (webgpu) {
    OrtMemoryInfo* gmem;
    OrtAllocator* galloc;
    check(api.CreateMemoryInfo("WebGPU_Buffer", DEVICE_ALLOCATOR, 0, 0, &gmem), "CreateMemoryInfo(WebGPU_Buffer)");
    check(api.CreateAllocator(s, gmem, &galloc), "CreateAllocator(WebGPU_Buffer)");
    OrtValue *ids_g, *mask_g, *logits_g, *logits_h, *kv[MAXKV];
    check(api.CreateTensorAsOrtValue(galloc, ids_shape, 2, T_INT64, &ids_g), "CreateTensorAsOrtValue(GPU input_ids)");
    check(api.CreateTensorAsOrtValue(galloc, mask_shape, 2, T_INT64, &mask_g), "CreateTensorAsOrtValue(GPU mask)");
    OrtIoBinding* b;
    check(api.CreateIoBinding(s, &b), "CreateIoBinding");
    check(api.BindInput(b, "input_ids", ids_g), "BindInput(input_ids)");
    check(api.BindInput(b, "attention_mask", mask_g), "BindInput(attention_mask)");
    for (int k = 0; k < io.layers2; k++) {
      check(api.CreateTensorAsOrtValue(galloc, kv_shape, 4, T_FLOAT, &kv[k]), "CreateTensorAsOrtValue(GPU KV buffer)");
      check(api.CopyTensors(g_env, (const OrtValue* const*)&zeros_h, &kv[k], NULL, 1), "CopyTensors(zeros to the KV buffer)");
      check(api.BindInput(b, io.past[k], kv[k]), "BindInput(past)");
      check(api.BindOutput(b, io.present[k], kv[k]), "BindOutput(present: the past's buffer)");
    }
    /* The logits [1, 1, vocab], preallocated on the GPU: vocab from one run of a CPU session. */
    {
      OrtSession* probe = make_session(model, c, 0);
      const char* in_names[MAXKV + 2];
      const OrtValue* in_vals[MAXKV + 2];
      size_t n = 0;
      ids[0] = 0;
      fill_mask(mask, M, 1);
      in_names[n] = "input_ids", in_vals[n++] = ids_h;
      in_names[n] = "attention_mask", in_vals[n++] = mask_h;
      for (int k = 0; k < io.layers2; k++) in_names[n] = io.past[k], in_vals[n++] = zeros_h;
      const char* out_name = "logits";
      OrtValue* out = NULL;
      check(api.Run(probe, g_ro, in_names, in_vals, n, &out_name, 1, &out), "Run(probe for the logits' shape)");
      OrtTensorTypeAndShapeInfo* info;
      int64_t d[8];
      size_t r;
      check(api.GetTensorTypeAndShape(out, &info), "GetTensorTypeAndShape");
      check(api.GetDimensionsCount(info, &r), "GetDimensionsCount");
      check(api.GetDimensions(info, d, r), "GetDimensions");
      api.ReleaseTensorTypeAndShapeInfo(info);
      io.vocab = d[r - 1];
      api.ReleaseValue(out);
      api.ReleaseSession(probe);
    }
    const int64_t lg_shape[3] = {1, 1, io.vocab};
    check(api.CreateTensorAsOrtValue(galloc, lg_shape, 3, T_FLOAT, &logits_g), "CreateTensorAsOrtValue(GPU logits)");
    check(api.CreateTensorAsOrtValue(g_cpu, lg_shape, 3, T_FLOAT, &logits_h), "CreateTensorAsOrtValue(host logits)");
    check(api.BindOutput(b, "logits", logits_g), "BindOutput(logits)");
    L->logits = malloc(sizeof(float) * (size_t)(io.vocab * L->steps));
    const OrtValue* src[2] = {ids_h, mask_h};
    OrtValue* dst[2] = {ids_g, mask_g};
    for (int k = 0; k < L->steps; k++) {
      const int64_t past = L->past_start + k;
      if (past + 1 > M) die("step %d: past %lld + 1 exceeds the buffer's %lld positions", k, (long long)past, (long long)M);
      if (forced) next = forced[k];
      double ts = now_ms();
      ids[0] = next;
      fill_mask(mask, M, past + 1);
      check(api.CopyTensors(g_env, src, dst, NULL, 2), "CopyTensors(input_ids and mask to the GPU)");
      check(api.RunWithBinding(s, g_ro, b), "RunWithBinding");
      check(api.CopyTensors(g_env, (const OrtValue* const*)&logits_g, &logits_h, NULL, 1), "CopyTensors(logits to host)");
      const float* row = data_of(logits_h);
      L->tokens[k] = next;
      next = argmax(row, io.vocab);
      L->ms[k] = now_ms() - ts;
      memcpy(L->logits + (size_t)k * (size_t)io.vocab, row, sizeof(float) * (size_t)io.vocab);
    }
  } else {
    OrtValue* kv[MAXKV];
    for (int k = 0; k < io.layers2; k++) kv[k] = zeros_h;
    const char* in_names[MAXKV + 2];
    const char* out_names[MAXKV + 1];
    const OrtValue* in_vals[MAXKV + 2];
    OrtValue* outs[MAXKV + 1];
    out_names[0] = "logits";
    for (int k = 0; k < io.layers2; k++) out_names[k + 1] = io.present[k];
    for (int k = 0; k < L->steps; k++) {
      const int64_t past = L->past_start + k;
      if (past + 1 > M) die("step %d: past %lld + 1 exceeds the buffer's %lld positions", k, (long long)past, (long long)M);
      if (forced) next = forced[k];
      double ts = now_ms();
      ids[0] = next;
      fill_mask(mask, M, past + 1);
      size_t n = 0;
      in_names[n] = "input_ids", in_vals[n++] = ids_h;
      in_names[n] = "attention_mask", in_vals[n++] = mask_h;
      for (int j = 0; j < io.layers2; j++) in_names[n] = io.past[j], in_vals[n++] = kv[j];
      memset(outs, 0, sizeof outs);
      check(api.Run(s, g_ro, in_names, in_vals, n, out_names, (size_t)io.layers2 + 1, outs), "Run");
      if (!io.vocab) {
        OrtTensorTypeAndShapeInfo* info;
        int64_t d[8];
        size_t r;
        check(api.GetTensorTypeAndShape(outs[0], &info), "GetTensorTypeAndShape");
        check(api.GetDimensionsCount(info, &r), "GetDimensionsCount");
        check(api.GetDimensions(info, d, r), "GetDimensions");
        api.ReleaseTensorTypeAndShapeInfo(info);
        io.vocab = d[r - 1];
        L->logits = malloc(sizeof(float) * (size_t)(io.vocab * L->steps));
      }
      const float* row = data_of(outs[0]);
      L->tokens[k] = next;
      next = argmax(row, io.vocab);
      L->ms[k] = now_ms() - ts;
      memcpy(L->logits + (size_t)k * (size_t)io.vocab, row, sizeof(float) * (size_t)io.vocab);
      api.ReleaseValue(outs[0]);
      for (int j = 0; j < io.layers2; j++) {
        if (kv[j] != zeros_h) api.ReleaseValue(kv[j]);
        kv[j] = outs[j + 1];
      }
    }
  }
  L->replays = g_replays - replays0;
  g_vocab = io.vocab;
}

static void usage(void) {
  fprintf(stderr,
          "usage: genai_peer MODEL --max-len M [--ep webgpu|cpu] [--capture] [--steps N] [--past-start P0]\n"
          "                  [--start-token T] [--check-cpu] [--atol A] [--rtol R] [--ep-opt K=V]... [--threads N]\n"
          "                  [--lib PATH] [--json]\n");
  exit(1);
}

int main(int argc, char** argv) {
  const char* model = NULL;
  const char* lib = getenv("ORT_PEER_LIB");
  Cfg c = {.webgpu = 1};
  int steps = 16, check_cpu = 0, json = 0;
  int64_t past_start = 1, start_token = 0;
  double atol = 1e-4, rtol = 1e-3;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(flag) (!strcmp(a, flag) && (v || (usage(), 0)) && ++i)
    if (ARG("--ep")) c.webgpu = !strcmp(v, "webgpu") ? 1 : !strcmp(v, "cpu") ? 0 : (usage(), 0);
    else if (!strcmp(a, "--capture")) c.capture = 1;
    else if (ARG("--steps")) steps = atoi(v);
    else if (ARG("--past-start")) past_start = atoll(v);
    else if (ARG("--start-token")) start_token = atoll(v);
    else if (ARG("--max-len")) c.max_len = atoll(v);
    else if (ARG("--threads")) c.threads = atoi(v);
    else if (ARG("--atol")) atol = atof(v);
    else if (ARG("--rtol")) rtol = atof(v);
    else if (ARG("--lib")) lib = v;
    else if (ARG("--ep-opt")) {
      const char* eq = strchr(v, '=');
      if (!eq || c.n_opt == 32) usage();
      c.opt_k[c.n_opt] = strndup(v, (size_t)(eq - v));
      c.opt_v[c.n_opt++] = eq + 1;
    } else if (!strcmp(a, "--check-cpu")) check_cpu = 1;
    else if (!strcmp(a, "--json")) json = 1;
    else if (a[0] == '-' || model) usage();
    else model = a;
#undef ARG
  }
  if (!model || c.max_len < 1 || steps < 1 || past_start < 0) usage();
  if (c.capture && !c.webgpu) die("--capture needs --ep webgpu");
  if (!lib) {
    static char path[4096];
    char exe[4000];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) die("give --lib or ORT_PEER_LIB");
    exe[n] = 0;
    *strrchr(exe, '/') = 0;
    /* Beside it: bench/.peer (bench/compare's peer build), or the bundle's folder. */
    snprintf(path, sizeof path, "%s/.cache/onnxruntime-node-1.30.0/libonnxruntime.so.1", exe);
    if (access(path, R_OK)) snprintf(path, sizeof path, "%s/libonnxruntime.so.1", exe);
    lib = path;
  }
  load(lib);
  check(api.CreateEnvWithCustomLogger(on_log, NULL, 1, "genai_peer", &g_env), "CreateEnvWithCustomLogger");
  check(api.GetAllocatorWithDefaultOptions(&g_cpu), "GetAllocatorWithDefaultOptions");
  check(api.CreateRunOptions(&g_ro), "CreateRunOptions");

  Loop L = {.steps = steps, .past_start = past_start, .start_token = start_token};
  L.tokens = calloc((size_t)steps, sizeof(int64_t));
  L.ms = calloc((size_t)steps, sizeof(double));
  run_loop(model, &c, c.webgpu, &L, NULL);
  const int64_t vocab = g_vocab;

  double* timed = calloc((size_t)steps, sizeof(double));
  int nt = 0;
  for (int k = 1; k < steps; k++) timed[nt++] = L.ms[k];
  qsort(timed, (size_t)nt, sizeof(double), cmp_double);
  double med = nt ? (nt % 2 ? timed[nt / 2] : 0.5 * (timed[nt / 2 - 1] + timed[nt / 2])) : L.ms[0], mean = 0;
  for (int k = 0; k < nt; k++) mean += timed[k] / nt;

  int checked = 0, allclose = 1, argmax_match = 1;
  long n_mismatch = 0;
  double max_abs = 0;
  if (check_cpu) {
    Cfg rc = c;
    rc.capture = 0;
    Loop R = {.steps = steps, .past_start = past_start, .start_token = start_token};
    R.tokens = calloc((size_t)steps, sizeof(int64_t));
    R.ms = calloc((size_t)steps, sizeof(double));
    run_loop(model, &rc, 0, &R, L.tokens);
    for (int k = 0; k < steps; k++) {
      const float* x = L.logits + (size_t)k * (size_t)vocab;
      const float* y = R.logits + (size_t)k * (size_t)vocab;
      for (int64_t i = 0; i < vocab; i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (d > max_abs) max_abs = d;
        if (!(d <= atol + rtol * fabs((double)y[i]))) allclose = 0, n_mismatch++;
      }
      if (argmax(x, vocab) != argmax(y, vocab)) argmax_match = 0;
    }
    checked = 1;
  }

  if (json) {
    printf("{\n  \"ok\": true,\n  \"harness\": \"genai_peer\",\n  \"ort_version\": \"%s\",\n  \"lib\": \"%s\",\n", g_version, lib);
    printf("  \"model\": \"%s\",\n  \"ep\": \"%s\",\n  \"capture\": %s,\n  \"max_len\": %lld,\n", model,
           c.webgpu ? "webgpu" : "cpu", c.capture ? "true" : "false", (long long)c.max_len);
    printf("  \"session_create_ms\": %.3f,\n  \"decode_loop\": {\n", L.create_ms);
    printf("    \"steps\": %d,\n    \"past_start\": %lld,\n    \"past_end\": %lld,\n", steps, (long long)past_start,
           (long long)(past_start + steps - 1));
    printf("    \"scope\": \"%s\",\n",
           c.webgpu ? "CopyTensors(input_ids, mask to bound GPU tensors) + RunWithBinding (KV buffers bound once, "
                      "past and present the same tensor) + CopyTensors(logits to host) + argmax"
                    : "Run with host tensors (presents fed back as pasts) + argmax");
    printf("    \"first_step_ms\": %.3f,\n", L.ms[0]);
    printf("    \"ms_per_step\": {\"median\": %.4f, \"min\": %.4f, \"max\": %.4f, \"mean\": %.4f, \"n\": %d},\n", med,
           nt ? timed[0] : L.ms[0], nt ? timed[nt - 1] : L.ms[0], nt ? mean : L.ms[0], nt);
    printf("    \"tokens_per_s\": %.2f,\n    \"capture_replays\": %ld,\n", med > 0 ? 1000.0 / med : 0.0, L.replays);
    printf("    \"step_ms\": [");
    for (int k = 0; k < steps; k++) printf("%s%.3f", k ? ", " : "", L.ms[k]);
    printf("],\n    \"tokens\": [");
    for (int k = 0; k < steps; k++) printf("%s%lld", k ? ", " : "", (long long)L.tokens[k]);
    printf("],\n    \"last_argmax\": %lld", (long long)argmax(L.logits + (size_t)(steps - 1) * (size_t)vocab, vocab));
    if (checked)
      printf(",\n    \"vs_cpu\": {\"allclose\": %s, \"argmax_match\": %s, \"max_abs_diff\": %g, \"n_mismatch\": %ld, "
             "\"atol\": %g, \"rtol\": %g}",
             allclose ? "true" : "false", argmax_match ? "true" : "false", max_abs, n_mismatch, atol, rtol);
    printf("\n  },\n  \"match_cpu\": %s\n}\n", checked ? (allclose && argmax_match ? "true" : "false") : "null");
  } else {
    printf("%s  ep=%s capture=%s  %d steps, past %lld -> %lld (buffer %lld)\n", model, c.webgpu ? "webgpu" : "cpu",
           c.capture ? "on" : "off", steps, (long long)past_start, (long long)(past_start + steps - 1), (long long)c.max_len);
    printf("first step %.3f ms; ms per step (steps 2..N): median %.3f -> %.1f tokens/s; replays %ld\n", L.ms[0], med,
           med > 0 ? 1000.0 / med : 0.0, L.replays);
    printf("tokens:");
    for (int k = 0; k < steps && k < 32; k++) printf(" %lld", (long long)L.tokens[k]);
    printf("\n");
    if (checked)
      printf("check against the CPU EP: %s (max abs diff %g, argmax %s)\n", allclose && argmax_match ? "match" : "MISMATCH",
             max_abs, argmax_match ? "equal" : "DIFFERS");
  }
  return checked && !(allclose && argmax_match) ? 3 : 0;
}
