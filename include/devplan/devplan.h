/* devplan: the whole public C API. */
#ifndef DEVPLAN_H
#define DEVPLAN_H
#include "core.h"
#include "device.h"
#include "suggest.h"
#include "type.h"
#include "scalar.h"
#include "attrs.h"
#include "expr.h"
#include "op.h"
#include "module.h"
#include "visit.h"
#include "print.h"
#include "infer.h"
#include "plan.h"
#include "parse.h"
#include "dfpattern.h"
#include "partition.h"
#endif
