/*
 * DLPack device type names and numbers (planner.md, "Devices and targets").
 */
#include <stdlib.h>
#include <string.h>
#include "devplan/device.h"

static const struct { const char *name; int type; } device_types[] = {
  {"cpu", DP_DEV_CPU}, {"llvm", DP_DEV_CPU}, {"cuda", DP_DEV_CUDA}, {"gpu", DP_DEV_CUDA},
  {"cuda_host", DP_DEV_CUDA_HOST}, {"opencl", DP_DEV_OPENCL}, {"vulkan", DP_DEV_VULKAN},
  {"metal", DP_DEV_METAL}, {"vpi", DP_DEV_VPI}, {"rocm", DP_DEV_ROCM},
  {"rocm_host", DP_DEV_ROCM_HOST}, {"ext_dev", DP_DEV_EXT_DEV},
  {"cuda_managed", DP_DEV_CUDA_MANAGED}, {"oneapi", DP_DEV_ONEAPI},
  {"webgpu", DP_DEV_WEBGPU}, {"hexagon", DP_DEV_HEXAGON},
};

int dp_device_type_parse(const char *name) {
  if (!name) return -1;
  for (size_t i = 0; i < sizeof device_types / sizeof device_types[0]; i++)
    if (strcmp(device_types[i].name, name) == 0) return device_types[i].type;
  char *end;
  long n = strtol(name, &end, 10);
  if (*name && !*end && n >= 0 && n <= 1024) return (int)n;
  return -1;
}

const char *dp_device_type_name(int device_type) {
  for (size_t i = 0; i < sizeof device_types / sizeof device_types[0]; i++) {
    /* skip the aliases: the first name of each type is canonical */
    if (device_types[i].type == device_type && strcmp(device_types[i].name, "llvm") != 0 &&
        strcmp(device_types[i].name, "gpu") != 0)
      return device_types[i].name;
  }
  return NULL;
}
