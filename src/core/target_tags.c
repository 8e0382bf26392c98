/*
 * TVM's target tags: a name that stands for a whole target configuration
 * ("nvidia/tesla-p40" is a cuda target with the P40's architecture and
 * limits), as src/target/tag.cc registers them. Each tag is kept as the
 * JSON form of its configuration, read by dp_target_parse like any JSON
 * target, so a tag and its spelled-out configuration are one target.
 *
 * The CUDA tags follow TVM's TVM_REGISTER_CUDA_TAG: kind cuda, keys
 * cuda,gpu, the architecture, shared memory and registers per block, 1024
 * threads per block and warps of 32.
 */
#include <string.h>
#include "devplan/device.h"
#include "devplan/suggest.h"

#define CUDA_TAG(name, arch, smem, regs)                                                      \
  name, "{\"kind\": \"cuda\", \"keys\": [\"cuda\", \"gpu\"], \"arch\": \"" arch "\", "          \
        "\"max_shared_memory_per_block\": " #smem ", \"max_threads_per_block\": 1024, "        \
        "\"thread_warp_size\": 32, \"registers_per_block\": " #regs

static const struct { const char *name, *json; } tags[] = {
  /* CUDA_TAG leaves the object open for members a tag adds */
  {CUDA_TAG("nvidia/nvidia-a100", "sm_80", 49152, 65536) ", \"l2_cache_size_bytes\": 41943040}"},
  {CUDA_TAG("nvidia/nvidia-a40", "sm_86", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/nvidia-a30", "sm_80", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/nvidia-a10", "sm_86", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/nvidia-t4", "sm_75", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/nvidia-v100", "sm_70", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/tesla-v100", "sm_70", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/tesla-p100", "sm_60", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/tesla-p40", "sm_61", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/tesla-p4", "sm_61", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/tesla-m60", "sm_52", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/tesla-m40", "sm_52", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/tesla-k80", "sm_37", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/tesla-k40", "sm_35", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/tesla-k20", "sm_35", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/geforce-rtx-3090", "sm_86", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/geforce-rtx-3080", "sm_86", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/geforce-rtx-2080-ti", "sm_75", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/geforce-rtx-2080", "sm_75", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/geforce-rtx-2070", "sm_75", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/geforce-gtx-1080-ti", "sm_61", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/geforce-gtx-1080", "sm_61", 49152, 65536) "}"},
  {CUDA_TAG("nvidia/jetson-nano", "sm_53", 49152, 32768)
   ", \"host\": {\"kind\": \"llvm\", \"mtriple\": \"aarch64-linux-gnu\", "
   "\"mcpu\": \"cortex-a57\", \"num-cores\": 4}}"},
};

#define NTAGS (sizeof tags / sizeof tags[0])

const char *dp_target_tag_at(uint32_t i) { return i < NTAGS ? tags[i].name : NULL; }

const char *dp_target_tag_config(const char *name) {
  for (size_t i = 0; name && i < NTAGS; i++)
    if (!strcmp(tags[i].name, name)) return tags[i].json;
  return NULL;
}

const char *dp_target_tag_suggest(const char *name) {
  return dp_suggest_among(name, dp_target_tag_at);
}
