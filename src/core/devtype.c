/*
 * Device type names and numbers (planner.md, "Devices and targets"): the
 * DLPack names, TVM's own device types above DLPack's, and the aliases
 * TVM's tvm.runtime.Device accepts (target kind names, "cl"); plus "gpu",
 * TVM's old name for cuda.
 */
#include <stdlib.h>
#include <string.h>
#include "devplan/device.h"
#include "devplan/suggest.h"

/* The first name of each device type is its canonical name. */
static const struct { const char *name; int type; } device_types[] = {
  {"cpu", DP_DEV_CPU}, {"cuda", DP_DEV_CUDA}, {"cuda_host", DP_DEV_CUDA_HOST},
  {"opencl", DP_DEV_OPENCL}, {"vulkan", DP_DEV_VULKAN}, {"metal", DP_DEV_METAL},
  {"vpi", DP_DEV_VPI}, {"rocm", DP_DEV_ROCM}, {"rocm_host", DP_DEV_ROCM_HOST},
  {"ext_dev", DP_DEV_EXT_DEV}, {"cuda_managed", DP_DEV_CUDA_MANAGED},
  {"oneapi", DP_DEV_ONEAPI}, {"webgpu", DP_DEV_WEBGPU}, {"hexagon", DP_DEV_HEXAGON},
  /* TVM's TVMDeviceExtType (33, kDLSDAccel, has no name: TVM reads
     "sdaccel" as opencl) */
  {"aocl", 32}, {"opengl", 34}, {"microdev", 35},
  /* aliases */
  {"llvm", DP_DEV_CPU}, {"c", DP_DEV_CPU}, {"stackvm", DP_DEV_CPU}, {"hybrid", DP_DEV_CPU},
  {"gpu", DP_DEV_CUDA}, {"nvptx", DP_DEV_CUDA}, {"cl", DP_DEV_OPENCL},
  {"sdaccel", DP_DEV_OPENCL},
  {"aocl_sw_emu", 32},
};

#define NTYPES (sizeof device_types / sizeof device_types[0])

int dp_device_type_parse(const char *name) {
  if (!name) return -1;
  for (size_t i = 0; i < NTYPES; i++)
    if (strcmp(device_types[i].name, name) == 0) return device_types[i].type;
  char *end;
  long n = strtol(name, &end, 10);
  if (*name && !*end && n >= 0 && n <= 1024) return (int)n;
  return -1;
}

const char *dp_device_type_name(int device_type) {
  for (size_t i = 0; i < NTYPES; i++)
    if (device_types[i].type == device_type) return device_types[i].name;
  return NULL;
}

static const char *name_at(uint32_t i) { return i < NTYPES ? device_types[i].name : NULL; }

const char *dp_device_type_suggest(const char *name) { return dp_suggest_among(name, name_at); }
