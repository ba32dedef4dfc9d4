/* A test NVML library: the functions of libnvidia-ml.so.1 that berth calls, with NVML's
 * ABI, answering from a text file instead of a driver, so that berth's NVML code runs
 * where no NVIDIA GPU is. Tests load it through BERTH_NVML_LIBRARY.
 *
 * The file is named by BERTH_TEST_NVML, one item a line ('#' starts a comment):
 *   driver 580.95.05
 *   gpu <GPU uuid> <bus 0000:00:06.0> <model, the rest of the line>
 *   mig <GPU uuid> <MIG uuid> <index> <name, the rest of the line>
 *   process <pid> <GPU or MIG uuid>
 *   processes-from <path>       "pid uuid" lines, read when the file exists
 *   grow <GPU or MIG uuid> <n>  every process query of that device after its first
 *                               reports n processes more (pids 4000000...): the list
 *                               grew between NVML's count and its copy
 * A GPU with any MIG line is in MIG mode. Devices and the driver are read by nvmlInit_v2,
 * which fails (NVML_ERROR_DRIVER_NOT_LOADED) when the file is missing or one of those
 * lines is garbled; processes (and grow) are read again by every
 * nvmlDeviceGetComputeRunningProcesses_v3, so a test may add some while berth runs, and a
 * garbled one fails that query (NVML_ERROR_UNKNOWN). Reasons go to stderr ("fake nvml:").
 *
 * Plain C with no berth code: it stands where NVIDIA's library would. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_UNKNOWN = 999,
};

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

enum { kMaxGpus = 16, kMaxMigs = 7, kMaxProcesses = 4096, kText = 96, kLine = 512 };

struct device {
  char uuid[kText], name[kText], bus[kText];
  int present, is_mig;
  struct device* migs[kMaxMigs]; /* a GPU's, by MIG index */
  unsigned queries;              /* process queries so far */
  unsigned grow;
};
typedef struct device* nvmlDevice_t;

static struct device gpus[kMaxGpus];
static struct device migs[kMaxGpus * kMaxMigs];
static int gpu_count, mig_count, inits;
static char driver[kText];
static struct {
  unsigned pid;
  struct device* dev;
} processes[kMaxProcesses];
static int process_count;

static void complain(const char* path, int line, const char* what) {
  fprintf(stderr, "fake nvml: %s:%d: %s\n", path, line, what);
}

static struct device* find(const char* uuid) {
  for (int i = 0; i < gpu_count; ++i)
    if (strcmp(gpus[i].uuid, uuid) == 0) return &gpus[i];
  for (int i = 0; i < mig_count; ++i)
    if (strcmp(migs[i].uuid, uuid) == 0) return &migs[i];
  return NULL;
}

/* Copies the rest of `s`, without blanks around it or the newline, into `out`. */
static int rest(const char* s, char* out) {
  s += strspn(s, " \t");
  size_t n = strcspn(s, "\r\n");
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) --n;
  if (n == 0 || n >= kText) return 0;
  memcpy(out, s, n);
  out[n] = '\0';
  return 1;
}

static int add_process(unsigned pid, const char* uuid) {
  struct device* d = find(uuid);
  if (d == NULL || process_count == kMaxProcesses) return 0;
  processes[process_count].pid = pid;
  processes[process_count].dev = d;
  ++process_count;
  return 1;
}

/* Reads "pid uuid" lines; a file that is not there (yet) has none. */
static int read_processes_from(const char* path) {
  FILE* f = fopen(path, "r");
  if (f == NULL) return 1;
  char line[kLine], uuid[kText];
  unsigned pid;
  int ok = 1, n = 0;
  while (ok && fgets(line, sizeof line, f) != NULL) {
    ++n;
    if (strspn(line, " \t\r\n") == strlen(line)) continue;
    ok = sscanf(line, "%u %95s", &pid, uuid) == 2 && add_process(pid, uuid);
    if (!ok) complain(path, n, "expected \"pid uuid\" of a known device");
  }
  fclose(f);
  return ok;
}

/* Parses the file: devices and the driver when `devices`, else processes and growth. */
static int load(int devices) {
  const char* path = getenv("BERTH_TEST_NVML");
  if (path == NULL) {
    complain("BERTH_TEST_NVML", 0, "not set");
    return 0;
  }
  FILE* f = fopen(path, "r");
  if (f == NULL) {
    complain(path, 0, "cannot open");
    return 0;
  }
  if (devices) gpu_count = mig_count = 0, driver[0] = '\0';
  process_count = 0;
  for (int i = 0; i < gpu_count; ++i) gpus[i].grow = 0;
  for (int i = 0; i < mig_count; ++i) migs[i].grow = 0;
  char line[kLine], word[kText], uuid[kText], other[kText];
  int ok = 1, n = 0, used;
  unsigned number;
  while (ok && fgets(line, sizeof line, f) != NULL) {
    ++n;
    char* hash = strchr(line, '#');
    if (hash != NULL) *hash = '\0';
    if (sscanf(line, "%95s%n", word, &used) != 1) continue;
    const char* args = line + used;
    if (strcmp(word, "driver") == 0) {
      ok = !devices || rest(args, driver);
    } else if (strcmp(word, "gpu") == 0) {
      if (!devices) continue;
      struct device* g = &gpus[gpu_count];
      ok = gpu_count < kMaxGpus && sscanf(args, "%95s %95s%n", uuid, other, &used) == 2 &&
           find(uuid) == NULL;
      if (ok) {
        memset(g, 0, sizeof *g);
        strcpy(g->uuid, uuid);
        strcpy(g->bus, other);
        ok = rest(args + used, g->name);
        gpu_count += ok;
      }
    } else if (strcmp(word, "mig") == 0) {
      if (!devices) continue;
      struct device* parent;
      ok = mig_count < kMaxGpus * kMaxMigs &&
           sscanf(args, "%95s %95s %u%n", uuid, other, &number, &used) == 3 &&
           (parent = find(uuid)) != NULL && !parent->is_mig && number < kMaxMigs &&
           parent->migs[number] == NULL && find(other) == NULL;
      if (ok) {
        struct device* m = &migs[mig_count];
        memset(m, 0, sizeof *m);
        m->is_mig = 1;
        strcpy(m->uuid, other);
        ok = rest(args + used, m->name);
        if (ok) parent->migs[number] = m, ++mig_count;
      }
    } else if (strcmp(word, "process") == 0) {
      ok = devices || (sscanf(args, "%u %95s", &number, uuid) == 2 && add_process(number, uuid));
    } else if (strcmp(word, "processes-from") == 0) {
      ok = rest(args, other) && (devices || read_processes_from(other));
    } else if (strcmp(word, "grow") == 0) {
      struct device* d;
      ok = devices || (sscanf(args, "%95s %u", uuid, &number) == 2 && (d = find(uuid)) != NULL &&
                       (d->grow = number, 1));
    } else {
      ok = 0;
    }
    if (!ok) complain(path, n, "not an item of a fake NVML file, or a bad one");
  }
  fclose(f);
  return ok;
}

nvmlReturn_t nvmlInit_v2(void) {
  /* NVML counts initialisations; the file is read by the first. */
  if (inits == 0 && !load(1)) return NVML_ERROR_DRIVER_NOT_LOADED;
  ++inits;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  if (inits == 0) return NVML_ERROR_UNINITIALIZED;
  --inits;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}

static nvmlReturn_t copy(char* out, unsigned int length, const char* s) {
  if (inits == 0) return NVML_ERROR_UNINITIALIZED;
  if (out == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(s) >= length) return NVML_ERROR_INSUFFICIENT_SIZE;
  strcpy(out, s);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return copy(version, length, driver);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (inits == 0) return NVML_ERROR_UNINITIALIZED;
  *count = (unsigned)gpu_count;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (inits == 0) return NVML_ERROR_UNINITIALIZED;
  if (index >= (unsigned)gpu_count || device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &gpus[index];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return device == NULL ? NVML_ERROR_INVALID_ARGUMENT : copy(uuid, length, device->uuid);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return device == NULL ? NVML_ERROR_INVALID_ARGUMENT : copy(name, length, device->name);
}

/* NVML writes the bus id with an 8-digit domain and upper-case hex ("00000000:3B:00.0"),
 * and the legacy one with 4 digits. */
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (inits == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == NULL || device->is_mig || pci == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  memset(pci, 0, sizeof *pci);
  unsigned function = 0;
  if (sscanf(device->bus, "%x:%x:%x.%x", &pci->domain, &pci->bus, &pci->device, &function) != 4)
    return NVML_ERROR_UNKNOWN;
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", pci->domain, pci->bus,
           pci->device, function);
  snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.%X", pci->domain, pci->bus, pci->device,
           function);
  return NVML_SUCCESS;
}

static int mig_on(nvmlDevice_t device) {
  for (int i = 0; i < kMaxMigs; ++i)
    if (device->migs[i] != NULL) return 1;
  return 0;
}

/* A GPU without MIG instances is one that cannot have them, as most GPUs. */
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                  unsigned int* pending) {
  if (inits == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == NULL || device->is_mig || current == NULL || pending == NULL)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (!mig_on(device)) return NVML_ERROR_NOT_SUPPORTED;
  *current = *pending = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  if (inits == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == NULL || device->is_mig || count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *count = mig_on(device) ? kMaxMigs : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* mig) {
  if (inits == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == NULL || device->is_mig || mig == NULL || index >= kMaxMigs)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (device->migs[index] == NULL) return NVML_ERROR_NOT_FOUND;
  *mig = device->migs[index];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                     nvmlProcessInfo_t* infos) {
  if (inits == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == NULL || count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (!load(0)) return NVML_ERROR_UNKNOWN;
  unsigned extra = device->queries++ > 0 ? device->grow : 0;
  unsigned need = extra;
  for (int i = 0; i < process_count; ++i) need += processes[i].dev == device;
  if (*count < need) {
    *count = need;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (need > 0 && infos == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned n = 0;
  for (int i = 0; i < process_count; ++i) {
    if (processes[i].dev != device) continue;
    memset(&infos[n], 0, sizeof infos[n]);
    infos[n++].pid = processes[i].pid;
  }
  for (unsigned i = 0; i < extra; ++i) {
    memset(&infos[n], 0, sizeof infos[n]);
    infos[n++].pid = 4000000 + i;
  }
  *count = n;
  return NVML_SUCCESS;
}
