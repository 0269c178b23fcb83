/*
 * A fake NVML for envdoctor's tests: exports the NVML entry points nvml-wrapper resolves for
 * the calls envdoctor makes, with the signatures and struct layouts of nvml.h, and answers
 * with fixture data.
 *
 * nvml-wrapper-sys resolves every symbol at load time but keeps a Result per symbol (a missing
 * one is an error only when it is called), so only the functions envdoctor calls are exported;
 * a query the fake device lacks answers NVML_ERROR_NOT_SUPPORTED, as real NVML does.
 *
 * The scenario is chosen at nvmlInit_v2 time by FAKE_NVML_SCENARIO:
 *   two-gpus (default)  GPU 0: H100, DEFAULT compute mode, persistence on, a foreign process
 *                       (pid FAKE_NVML_FOREIGN_PID) holding 90% of its memory and one of ours
 *                       (pid FAKE_NVML_OWN_PID) that also has a graphics context;
 *                       GPU 1: A100, EXCLUSIVE_PROCESS, MIG enabled with two MIG devices,
 *                       utilisation not supported, one graphics process.
 *   idle                the same two GPUs with no process on them and only the driver's
 *                       reserve in use; GPU 1 in DEFAULT compute mode (a healthy twin).
 *   hang                nvmlInit_v2 never returns (a wedged driver).
 *   hang-device         init and GPU 0 answer; every query of GPU 1's processes blocks.
 *   mismatch            nvmlInit_v2 returns NVML_ERROR_LIB_RM_VERSION_MISMATCH.
 *   no-driver           nvmlInit_v2 returns NVML_ERROR_DRIVER_NOT_LOADED.
 *   no-devices          init works, nvmlDeviceGetCount_v2 says 0.
 *   crash               nvmlInit_v2 dereferences NULL.
 *   hidden-memory       idle, but 30000 MiB of GPU 0 in use with no process listed (a process
 *                       in another container, an MPS server, a leaked context).
 *   mig-empty           idle, but GPU 1 has MIG enabled with no MIG device created.
 *   geforce             one idle NVIDIA GeForce RTX 4090 (cc 8.9, no ECC): a consumer GPU.
 *   memory-errors       idle, but GPU 0 has 2 uncorrectable ECC errors since the driver
 *                       loaded and a row remap pending (a GPU reset is due); with
 *                       FAKE_NVML_LEGACY, GPU 0 has pages pending retirement instead.
 *   fork-noisy          two-gpus, but nvmlInit_v2 first forks a process that sleeps forever
 *                       holding every inherited fd (its pid written to FAKE_NVML_PIDFILE) and
 *                       prints a forged event and an unterminated line on stdout.
 *   fork-setsid         two-gpus, but nvmlInit_v2 first forks a child that calls setsid()
 *                       and sleeps forever, and a daemon (fork, setsid, fork, the middle
 *                       process exits) that sleeps forever: both leave the process group.
 *                       "CHILD DAEMON" pids written to FAKE_NVML_PIDFILE.
 *   one-gpu             one idle GPU, described by FAKE_NVML_GPU_NAME (default the H100),
 *                       FAKE_NVML_GPU_CC ("12.0"), FAKE_NVML_DRIVER ("470.82.01") and
 *                       FAKE_NVML_CUDA (11040): a reporter's GPU and driver, for the
 *                       public-report bench (tests/measure_bench.rs).
 *
 * Compiled with -DFAKE_NVML_LEGACY it looks like a pre-R510 driver (470.256.02, CUDA 11.4):
 * nvmlDeviceGetMemoryInfo_v2 and the _v3 process lists are not exported, only
 * nvmlDeviceGetMemoryInfo (v1) and the _v2 lists; nvmlDeviceGetRemappedRows is not exported and
 * page retirement is reported instead (a Volta-era driver).
 *
 * ECC: the data-center GPUs have ECC enabled; the GeForce has none (NOT_SUPPORTED).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
};

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

#ifdef FAKE_NVML_LEGACY
#define DRIVER_VERSION "470.256.02"
#define NVML_VERSION "11.470.256.02"
#define CUDA_VERSION 11040
#else
#define DRIVER_VERSION "580.65.06"
#define NVML_VERSION "13.580.65.06"
#define CUDA_VERSION 13000
#endif

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

#define MIB (1024ULL * 1024ULL)
#define MAX_PROCS 4

struct proc {
    unsigned int pid;
    unsigned long long used;
};

struct fake_device {
    int is_mig;
    const char *name;
    const char *uuid;
    const char *bus_id;
    int cc_major, cc_minor;
    unsigned long long total, used;
    int util; /* -1: not supported */
    int compute_mode;
    int mig;
    int persistence;
    int n_compute;
    struct proc compute[MAX_PROCS];
    int n_graphics;
    struct proc graphics[MAX_PROCS];
    int hang_processes;
    int no_mig_devices;
    int ecc;                  /* -1: not supported, else enabled (0/1) */
    unsigned long long uncorrected;
    int remap_pending, remap_failed, retire_pending;
};

static struct fake_device gpus[2];
static struct fake_device migs[2];
static unsigned int gpu_count = 0;
static int initialised = 0;
static const char *driver_version = DRIVER_VERSION;
static int cuda_version = CUDA_VERSION;

static unsigned int env_pid(const char *name, unsigned int dflt)
{
    const char *v = getenv(name);
    return v && *v ? (unsigned int)strtoul(v, NULL, 10) : dflt;
}

static void block_forever(void)
{
    for (;;)
        pause();
}

/* The fork-setsid scenario: a child that leaves the process group and stays, and a
 * double-forked daemon whose middle process exits at once (so the daemon is orphaned while
 * NVML is still being queried). Their pids go to FAKE_NVML_PIDFILE, "CHILD DAEMON". */
static void fork_out_of_the_group(void)
{
    int fds[2];
    if (pipe(fds) != 0)
        return;
    pid_t child = fork();
    if (child == 0) {
        setsid();
        block_forever();
    }
    pid_t middle = fork();
    if (middle == 0) {
        setsid();
        pid_t daemon = fork();
        if (daemon == 0)
            block_forever();
        if (write(fds[1], &daemon, sizeof daemon) != sizeof daemon)
            _exit(1);
        _exit(0);
    }
    pid_t daemon = 0;
    if (read(fds[0], &daemon, sizeof daemon) != sizeof daemon)
        daemon = 0;
    waitpid(middle, NULL, 0);
    close(fds[0]);
    close(fds[1]);
    const char *pf = getenv("FAKE_NVML_PIDFILE");
    if (pf) {
        FILE *f = fopen(pf, "w");
        if (f) {
            fprintf(f, "%d %d", (int)child, (int)daemon);
            fclose(f);
        }
    }
}

static void load_two_gpus(int hang_device)
{
    unsigned int own = env_pid("FAKE_NVML_OWN_PID", (unsigned int)getpid());
    unsigned int foreign = env_pid("FAKE_NVML_FOREIGN_PID", 4194000u);
    memset(gpus, 0, sizeof gpus);
    memset(migs, 0, sizeof migs);

    struct fake_device *g = &gpus[0];
    g->name = "NVIDIA H100 80GB HBM3";
    g->uuid = "GPU-11111111-2222-3333-4444-555555555555";
    g->bus_id = "00000000:18:00.0";
    g->cc_major = 9;
    g->cc_minor = 0;
    g->total = 81559ULL * MIB;
    g->compute[0].pid = foreign;
    g->compute[0].used = 73403ULL * MIB; /* 90% of 81559 MiB */
    g->compute[1].pid = own;
    g->compute[1].used = 512ULL * MIB;
    g->n_compute = 2;
    g->graphics[0].pid = own; /* a C+G process: listed in both lists */
    g->graphics[0].used = 512ULL * MIB;
    g->n_graphics = 1;
    g->used = 73403ULL * MIB + 512ULL * MIB + 600ULL * MIB; /* + driver reserve */
    g->util = 97;
    g->ecc = 1;
    g->compute_mode = 0; /* DEFAULT */
    g->mig = 0;
    g->persistence = 1;

    g = &gpus[1];
    g->name = "NVIDIA A100-SXM4-40GB";
    g->uuid = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
    g->bus_id = "00000000:3B:00.0";
    g->cc_major = 8;
    g->cc_minor = 0;
    g->total = 40960ULL * MIB;
    g->used = 1024ULL * MIB;
    g->util = -1;
    g->ecc = 1;
    g->compute_mode = 3; /* EXCLUSIVE_PROCESS */
    g->mig = 1;
    g->persistence = 0;
    g->graphics[0].pid = own;
    g->graphics[0].used = 1024ULL * MIB;
    g->n_graphics = 1;
    g->hang_processes = hang_device;

    migs[0].is_mig = 1;
    migs[0].uuid = "MIG-0f0e0d0c-0b0a-0908-0706-050403020100";
    migs[1].is_mig = 1;
    migs[1].uuid = "MIG-1f1e1d1c-1b1a-1918-1716-151413121110";
    gpu_count = 2;
}

/* The one-gpu scenario: GPU 0 of two-gpus, renamed and re-versioned from the environment. */
static void load_one_gpu(void)
{
    const char *name = getenv("FAKE_NVML_GPU_NAME");
    const char *cc = getenv("FAKE_NVML_GPU_CC");
    const char *drv = getenv("FAKE_NVML_DRIVER");
    const char *cuda = getenv("FAKE_NVML_CUDA");
    gpu_count = 1;
    if (name && *name)
        gpus[0].name = name;
    if (cc && *cc) {
        char *end = NULL;
        gpus[0].cc_major = (int)strtol(cc, &end, 10);
        gpus[0].cc_minor = (end && *end == '.') ? (int)strtol(end + 1, NULL, 10) : 0;
    }
    if (drv && *drv)
        driver_version = drv;
    if (cuda && *cuda)
        cuda_version = (int)strtol(cuda, NULL, 10);
}

nvmlReturn_t nvmlInit_v2(void)
{
    const char *s = getenv("FAKE_NVML_SCENARIO");
    if (!s || !*s)
        s = "two-gpus";
    if (!strcmp(s, "hang"))
        block_forever();
    if (!strcmp(s, "mismatch"))
        return NVML_ERROR_LIB_RM_VERSION_MISMATCH;
    if (!strcmp(s, "no-driver"))
        return NVML_ERROR_DRIVER_NOT_LOADED;
    if (!strcmp(s, "crash")) {
        volatile int *p = NULL;
        *p = 1;
    }
    if (!strcmp(s, "fork-noisy")) {
        pid_t pid = fork();
        if (pid == 0)
            block_forever();
        const char *pf = getenv("FAKE_NVML_PIDFILE");
        if (pf) {
            FILE *f = fopen(pf, "w");
            if (f) {
                fprintf(f, "%d", (int)pid);
                fclose(f);
            }
        }
        printf("{\"event\":\"init-failed\",\"status\":\"no-library\",\"message\":\"forged\"}\n");
        printf("unterminated noise");
        fflush(stdout);
    }
    if (!strcmp(s, "fork-setsid"))
        fork_out_of_the_group();
    if (!strcmp(s, "no-devices")) {
        gpu_count = 0;
    } else {
        load_two_gpus(!strcmp(s, "hang-device"));
    }
    if (!strcmp(s, "one-gpu"))
        load_one_gpu();
    int idle = !strcmp(s, "idle") || !strcmp(s, "hidden-memory") || !strcmp(s, "mig-empty") ||
               !strcmp(s, "geforce") || !strcmp(s, "memory-errors") || !strcmp(s, "one-gpu");
    if (idle) {
        for (unsigned int i = 0; i < gpu_count; i++) {
            gpus[i].n_compute = 0;
            gpus[i].n_graphics = 0;
            gpus[i].used = 600ULL * MIB;
            gpus[i].util = 0;
        }
        gpus[1].compute_mode = 0;
    }
    if (!strcmp(s, "hidden-memory"))
        gpus[0].used = 30000ULL * MIB;
    if (!strcmp(s, "mig-empty")) {
        gpus[1].mig = 1;
        gpus[1].no_mig_devices = 1;
    }
    if (!strcmp(s, "geforce")) {
        struct fake_device *g = &gpus[0];
        g->name = "NVIDIA GeForce RTX 4090";
        g->uuid = "GPU-44444444-0909-4090-4090-409040904090";
        g->bus_id = "00000000:01:00.0";
        g->cc_major = 8;
        g->cc_minor = 9;
        g->total = 24564ULL * MIB;
        g->ecc = -1;
        g->persistence = 0;
        gpu_count = 1;
    }
    if (!strcmp(s, "memory-errors")) {
        gpus[0].uncorrected = 2;
#ifdef FAKE_NVML_LEGACY
        gpus[0].retire_pending = 1;
#else
        gpus[0].remap_pending = 1;
#endif
    }
    initialised = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    (void)flags;
    return nvmlInit_v2();
}

nvmlReturn_t nvmlShutdown(void)
{
    initialised = 0;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "Driver/library version mismatch";
    default: return "Unknown Error";
    }
}

static nvmlReturn_t copy_str(char *dst, unsigned int len, const char *src)
{
    if (!dst)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(src) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(dst, src);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int len)
{
    return initialised ? copy_str(v, len, driver_version) : NVML_ERROR_UNINITIALIZED;
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned int len)
{
    return initialised ? copy_str(v, len, NVML_VERSION) : NVML_ERROR_UNINITIALIZED;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    *v = cuda_version;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
    return nvmlSystemGetCudaDriverVersion_v2(v);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    *n = gpu_count;
    return NVML_SUCCESS;
}

typedef struct fake_device *nvmlDevice_t;

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (i >= gpu_count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *d = &gpus[i];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *i)
{
    if (d->is_mig)
        return NVML_ERROR_NOT_SUPPORTED;
    *i = (unsigned int)(d - gpus);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int len)
{
    return copy_str(name, len, d->is_mig ? "MIG 3g.20gb" : d->name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len)
{
    return copy_str(uuid, len, d->uuid);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    if (d->is_mig)
        return NVML_ERROR_NOT_SUPPORTED;
    memset(p, 0, sizeof *p);
    strcpy(p->busId, d->bus_id);
    strncpy(p->busIdLegacy, d->bus_id + 4, sizeof p->busIdLegacy - 1);
    p->pciDeviceId = 0x233010de;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor)
{
    *major = d->cc_major;
    *minor = d->cc_minor;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    if (d->is_mig)
        return NVML_ERROR_NOT_SUPPORTED;
    m->total = d->total;
    m->used = d->used;
    m->free = d->total - d->used;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_LEGACY
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    if (d->is_mig)
        return NVML_ERROR_NOT_SUPPORTED;
    if ((m->version >> 24) != 2 || (m->version & 0xffffff) != sizeof *m)
        return NVML_ERROR_INVALID_ARGUMENT; /* as the real one does for a wrong struct */
    m->total = d->total;
    m->used = d->used;
    m->reserved = 0;
    m->free = d->total - d->used;
    return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    if (d->util < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    u->gpu = (unsigned int)d->util;
    u->memory = 40;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t d, int *mode)
{
    *mode = d->compute_mode;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending)
{
    *current = (unsigned int)d->mig;
    *pending = (unsigned int)d->mig;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int *state)
{
    *state = d->persistence;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *n)
{
    if (!d->mig)
        return NVML_ERROR_NOT_SUPPORTED;
    *n = 7; /* slots; only two are populated */
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int i, nvmlDevice_t *mig)
{
    if (!d->mig)
        return NVML_ERROR_NOT_SUPPORTED;
    if (i >= 2 || d->no_mig_devices)
        return NVML_ERROR_NOT_FOUND;
    *mig = &migs[i];
    return NVML_SUCCESS;
}

static nvmlReturn_t list(const struct fake_device *d, int n, const struct proc *ps,
                         unsigned int *count, nvmlProcessInfo_t *out)
{
    if (d->hang_processes)
        block_forever();
    if (*count < (unsigned int)n || (!out && n > 0)) {
        *count = (unsigned int)n;
        return n == 0 ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (int i = 0; i < n; i++) {
        out[i].pid = ps[i].pid;
        out[i].usedGpuMemory = ps[i].used;
        out[i].gpuInstanceId = 0xFFFFFFFFu;
        out[i].computeInstanceId = 0xFFFFFFFFu;
    }
    *count = (unsigned int)n;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_LEGACY
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
                                                     nvmlProcessInfo_t *out)
{
    return list(d, d->n_compute, d->compute, count, out);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
                                                      nvmlProcessInfo_t *out)
{
    return list(d, d->n_graphics, d->graphics, count, out);
}
#endif

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *count,
                                                     nvmlProcessInfo_t *out)
{
    return list(d, d->n_compute, d->compute, count, out);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t d, unsigned int *count,
                                                      nvmlProcessInfo_t *out)
{
    return list(d, d->n_graphics, d->graphics, count, out);
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, int *current, int *pending)
{
    if (d->is_mig || d->ecc < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *current = d->ecc;
    *pending = d->ecc;
    return NVML_SUCCESS;
}

/* errorType 1 = NVML_MEMORY_ERROR_TYPE_UNCORRECTED; counterType 0 = NVML_VOLATILE_ECC */
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int error_type, int counter_type,
                                         unsigned long long *count)
{
    if (d->is_mig || d->ecc <= 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *count = (error_type == 1 && counter_type == 0) ? d->uncorrected : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int *pending)
{
#ifdef FAKE_NVML_LEGACY
    if (d->is_mig || d->ecc <= 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *pending = d->retire_pending;
    return NVML_SUCCESS;
#else
    /* Ampere and later replace page retirement with row remapping. */
    (void)d;
    (void)pending;
    return NVML_ERROR_NOT_SUPPORTED;
#endif
}

#ifndef FAKE_NVML_LEGACY
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corrected,
                                       unsigned int *uncorrected, unsigned int *pending,
                                       unsigned int *failed)
{
    if (d->is_mig || d->ecc <= 0)
        return NVML_ERROR_NOT_SUPPORTED;
    *corrected = 0;
    *uncorrected = d->remap_pending ? 1 : 0;
    *pending = (unsigned int)d->remap_pending;
    *failed = (unsigned int)d->remap_failed;
    return NVML_SUCCESS;
}
#endif
