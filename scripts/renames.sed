# The renames of issue 12 ("Names and layers"), one per line, as a sed script:
#   sed -i -f scripts/renames.sed $(git ls-files 'src/*' 'include/*' 'tests/*' 'bench/*' 'fuzz/*')
# Applied in order (a name that another one starts with comes after it).
# Rule: dp_ names are public (declared in include/devplan/*.h), dp__ names
# internal (src/*/internal.h and the other headers under src/); _str prints
# to a malloc'd string, _name gives a name, dp__hash_* hashes.
# What is not a rename (an API that changed shape) is listed at the end, as
# comments, with the hand edit it needs.

# --- one pointer map (src/core/ptrmap.h) replaces src/planner/pmap.c (git rm it) ---
# (first: these match the planner's text as it was)
/^\/\* ================= pmap.c: pointer -> id ================= \*\/$/,/^void dp__pmap_free(dp_pmap \*m);$/c\
/* ================= the pointer map: src/core/ptrmap.h ================= */\
#include "../core/ptrmap.h"
s/\bstruct dp_pslot\b/dp__ptrslot/g
s/\bdp_pmap\b/dp__ptrmap/g
s/\bdp__pmap_get(\([^,]*\), (uintptr_t)/dp__ptrmap_find(\1, /g
s/\bdp__pmap_\(add\|put\)(\([^,]*\), (uintptr_t)/dp__ptrmap_set(\2, /g
s/\bdp__pmap_free\b/dp__ptrmap_free/g
# the core's two other maps (print_map.c, the first ptrmap.c) are gone too; a get now
# gives the slot (dp__ptrslot: read ->ptr, ->word, or ->val and ->aux), not a void **
s/\bdp_ptrmap_get\b/dp__ptrmap_find/g
s/\bdp_ptrmap_put\b/dp__ptrmap_put/g
s/\bdp_ptrmap_free\b/dp__ptrmap_free/g
s/\bdp_ptrmap\b/dp__ptrmap/g
s/\bDP_PTRMAP_INIT\b/DP__PTRMAP_INIT/g

# --- the binding's helpers are internal to src/lua ---
s/\bdp_lua_check_device_type\b/dp__lua_check_device_type/g
s/\bdp_lua_pusherror\b/dp__lua_push_error/g
s/\bdp_lua_error_new\b/dp__lua_error_new/g
s/\bdp_lua_is_error\b/dp__lua_is_error/g
s/\bdp_lua_open_pattern\b/dp__lua_open_dfpattern/g
s/\bdp_lua_\([a-z0-9_]*\)\b/dp__lua_\1/g
s/\bdp_lud\b/dp__lud/g
s/"lbind\.h"/"l_init.h"/g
s/"l_ir\.h"/"l_init.h"/g

# --- core internals (src/core/internal.h, textbuf.h, json.h, ...) ---
s/\bdp_itab_eq\b/dp__itab_eq/g
s/\bdp_itab_find\b/dp__itab_find/g
s/\bdp_itab_insert\b/dp__itab_insert/g
s/\bdp_itab_remove\b/dp__itab_remove/g
s/\bdp_itab_free\b/dp__itab_free/g
s/\bdp_itab\b/dp__itab/g
s/\bdp_islot\b/dp__islot/g
s/\bdp_hash_bytes\b/dp__hash_bytes/g
s/\bdp_hash_str\b/dp__hash_string/g
s/\bdp_hash_u64\b/dp__hash_u64/g
s/\bdp_tb_\([a-z_]*\)\b/dp__tb_\1/g
s/\bdp_tb\b/dp__tb/g
s/\bdp_jdoc\b/dp__jdoc/g
s/\bdp_jval\b/dp__jval/g
s/\bdp_jw\b/dp__jw/g
s/\bDP_J_\([A-Z]*\)\b/DP__J_\1/g
s/\bdp_scope_entry\b/dp__scope_entry/g
s/\bdp_scope_slot\b/dp__scope_slot/g
s/\bdp_scope_undo\b/dp__scope_undo/g
s/\bdp_scope\b/dp__scope/g
s/\bdp_tsolver\b/dp__tsolver/g
s/\bdp_opdef\b/dp__opdef/g
s/\bDP_MAXDIM\b/DP__MAXDIM/g
s/\bDP_ATTR_LIST_DEPTH\b/DP__ATTR_LIST_DEPTH/g
s/\bDP_RULE_\(ANY\|FIXED\|SM\|GFX\)\b/DP__RULE_\1/g

# --- the dataflow pattern matcher's internals (src/pattern/internal.h) ---
s/\bdfp_\([a-z0-9_]*\)\b/dp__dfp_\1/g
s/\bDFP_NONE\b/DP__DFP_NONE/g

# --- the planner's internals (src/planner/planner.h) ---
s/\bdp_op_rule\b/dp__oprule/g
s/\bdp_plan_ops\b/dp__plan_ops/g
s/\bdp_attr_cache\b/dp__attr_cache/g
s/\bDP_ATTR_CACHE\b/DP__ATTR_CACHE/g
s/\bdp_ondev\b/dp__ondev/g
s/\bdp_devices\b/dp__devices/g
s/\bdp_copy_ends\b/dp__copy_ends/g
s/\bdp_mark\b/dp__mark/g
s/\bdp_index\b/dp__index/g
s/\bdp_dnode\b/dp__dnode/g
s/\bdp_cons\b/dp__cons/g
s/\bdp_proof\b/dp__proof/g
s/\bdp_op_log\b/dp__op_log/g
s/\bDP_NONE_ID\b/DP__NONE_ID/g
s/\bDP_DSIZE_MAX\b/DP__DSIZE_MAX/g

# --- one meaning for a suffix: _str prints, _name names ---
s/\bdp_av_str\b/dp_av_string/g
s/\bdp_av_str_of\b/dp_av_str/g
s/\bdp_dtype_str\b/dp_dtype_name/g
s/\bdp__attr_str\b/dp__attr_string/g

# --- no stutter ---
s/\bdp_ref_new_new\b/dp_ref_create_new/g
s/\bdp_ref_new\b/dp_ref_create/g
s/\bDP_REF_NEW\b/DP_REF_CREATE/g

# --- one way to print a type ---
s/\bdp_print_type\b/dp_type_str/g

# --- object types register themselves (core.h: dp_objtype_register) ---
# The planner's domains get their id from dp_domains_objtype() (plan.h),
# defined in src/planner/domains.c, which registers the type on first use.
/^ *dp_register_free(DP_OBJ_DOMAINS, dp__domains_free_fn);$/d
s/\bDP_OBJ_DOMAINS\b/dp_domains_objtype()/g

# --- nothing internal in the public headers ---
s/\bDP_DFPF_UNBOUND\b/DP__DFPF_UNBOUND/g
# dp_module's name index is opaque (struct dp__names *names, module.c):
# m->names_mask and m->names[i] were only read in module.c.
