/*
 * The placement optimiser, apart from the IR (planner.h, dp_place_problem): give
 * every variable a label (a device) so that the sum of unary costs
 * (compute time; a label a variable may not take is forbidden) and net
 * costs is least. A net is a value: made by one variable, read by others;
 * it costs, for each label among its readers other than its maker's, the
 * copy of its weight from the maker's label to that one: one copy per value
 * and destination device, as ShareCopies leaves a plan.
 *
 * Method: alpha-expansion (Boykov, Veksler, Zabih 2001). A move takes a
 * label alpha and lets every variable keep its label or switch to alpha;
 * the best move is a minimum s-t cut (maxflow.c). A net's cost in a move
 * is a sum of terms "the maker keeps and some reader switches" and "some
 * reader of label l keeps (and the maker switches)", each a graph gadget
 * with one auxiliary node (Kolmogorov and Zabih's construction for such
 * terms; a net of one reader is a pair of arcs; where a copy costs its
 * weight whatever its ends, a net of two readers whose three variables
 * end the move on two labels is three pair terms of half its weight, the
 * move's capacities doubled: move_net2).
 *
 * - Two labels: one move, from every free variable on the default label to
 *   the other, ranges over every labelling, and every term is exact: the
 *   result is a minimum (the tests compare it with brute force).
 * - More labels: moves over each label in turn until a round improves
 *   nothing. When a copy costs the same per unit of weight between any two
 *   labels (bytes, or one bandwidth), every move is exact and the result
 *   x satisfies, against a minimum x*,
 *       E(x) <= E_unary(x*) + 2 * min(K - 1, P - 1) * E_copy(x*)
 *   with K labels and P the most variables of one net (a value and its
 *   readers): each net cut by x* is crossed by at most min(K, P) - 1
 *   copies in the move towards each of its x*-labels and costs at least
 *   half a copy per x*-label (for nets of one reader this is the factor 2
 *   of Boykov et al. for the Potts model). With per-pair costs a term "some
 *   reader keeps label l and the maker switches to alpha" whose copy gets
 *   cheaper is not submodular; it is counted at its price before the move
 *   (an overestimate), and a move is taken only when the exact total goes
 *   down: the result is still a local minimum of the moves as modelled,
 *   without the bound. Where every term is exact and no cost can
 *   saturate, a move is judged by its cut alone (cuts_exact says why).
 *
 * A move's graph joins only the variables that may switch, through the
 * nets they share: it is cut one part (such a set of variables) at a
 * time, in a graph as small as the largest part (move_in_parts); moves
 * whose result is known are not made (the first towards the default
 * label, idle_label, spanned).
 *
 * Every loop is over arrays; deterministic (variables, nets and labels in
 * order; ties keep the current label).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "planner.h"

#define ST_S (UINT32_MAX - 1) /* keeps its label in this move */
#define ST_T (UINT32_MAX - 2) /* is alpha after this move */

int dp_place_init(dp_place_problem *m, uint32_t nvars, uint32_t nlabels, uint32_t dflt) {
  *m = (dp_place_problem){0};
  m->nvars = nvars;
  m->nlabels = nlabels;
  m->dflt = dflt;
  size_t n = nvars ? nvars : 1;
  m->fixed = dp_malloc(n * sizeof *m->fixed);
  m->allowed = dp_malloc(n * sizeof *m->allowed);
  m->stamp = dp_malloc(n * sizeof *m->stamp);
  if (!m->fixed || !m->allowed || !m->stamp || nlabels == 0 || nlabels > 64) {
    dp_place_free(m);
    return -1;
  }
  for (uint32_t v = 0; v < nvars; v++) dp__place_var_init(m, v);
  return 0;
}

void dp__place_var_init(dp_place_problem *m, uint32_t v) {
  m->fixed[v] = DP__NONE_ID;
  m->allowed[v] = m->nlabels == 64 ? UINT64_MAX : ((uint64_t)1 << m->nlabels) - 1;
  m->stamp[v] = DP__NONE_ID;
}

void dp_place_free(dp_place_problem *m) {
  free(m->fixed);
  free(m->allowed);
  free(m->unary);
  free(m->pair);
  free(m->nets);
  free(m->pins);
  free(m->stamp);
  *m = (dp_place_problem){0};
}

int dp_place_net(dp_place_problem *m, uint32_t src, const uint32_t *readers, uint32_t n, int64_t w) {
  if (w <= 0 || n == 0) return 0;
  /* (the room checked here first: place.c makes it at once, for every net) */
  if ((m->nnets == m->capnets && dp_grow((void **)&m->nets, &m->capnets, m->nnets + 1, sizeof *m->nets) < 0) ||
      (n > m->cappins - m->npins && dp_grow((void **)&m->pins, &m->cappins, m->npins + n, sizeof *m->pins) < 0)) {
    m->oom = 1;
    return -1;
  }
  uint32_t off = m->npins, k = 0, id = m->nnets;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t r = readers[i];
    if (r == src || m->stamp[r] == id) continue;
    m->stamp[r] = id;
    m->pins[off + k++] = r;
  }
  if (k == 0) return 0;
  m->npins += k;
  m->nets[m->nnets++] = (dp_place_pin_range){src, off, k, w};
  return 0;
}

static int64_t sat_add(int64_t a, int64_t b) {
  return a > DP__FLOW_INF - b ? DP__FLOW_INF : a + b;
}

int64_t dp_place_copy_cost(const dp_place_problem *m, int64_t w, uint32_t a, uint32_t b) {
  if (a == b) return 0;
  if (!m->pair) return w;
  double c = (double)w * m->pair[(size_t)a * m->nlabels + b];
  return c >= (double)DP__FLOW_INF ? DP__FLOW_INF : c <= 0 ? 0 : (int64_t)llround(c);
}

/* The labels among a net's readers (a mask). */
static uint64_t reader_labels(const dp_place_problem *m, const dp_place_pin_range *nt, const uint32_t *label) {
  uint64_t mask = 0;
  for (uint32_t i = 0; i < nt->n; i++) mask |= (uint64_t)1 << label[m->pins[nt->off + i]];
  return mask;
}

/* A net's cost: its maker on label lp, its readers on the labels of mask. */
static int64_t net_cost_of(const dp_place_problem *m, const dp_place_pin_range *nt, uint32_t lp, uint64_t mask) {
  mask &= ~((uint64_t)1 << lp);
  int64_t e = 0;
  for (uint32_t l = 0; mask; l++, mask >>= 1)
    if (mask & 1) e = sat_add(e, dp_place_copy_cost(m, nt->w, lp, l));
  return e;
}

static int64_t net_cost(const dp_place_problem *m, const dp_place_pin_range *nt, const uint32_t *label) {
  return net_cost_of(m, nt, label[nt->src], reader_labels(m, nt, label));
}

int64_t dp_place_energy(const dp_place_problem *m, const uint32_t *label) {
  int64_t e = 0;
  for (uint32_t v = 0; v < m->nvars; v++) {
    if (label[v] >= m->nlabels || !((m->allowed[v] >> label[v]) & 1)) return DP__FLOW_INF;
    if (m->unary) e = sat_add(e, m->unary[(size_t)v * m->nlabels + label[v]]);
  }
  for (uint32_t k = 0; k < m->nnets; k++) e = sat_add(e, net_cost(m, &m->nets[k], label));
  return e;
}

/* dp_place_energy of two labellings, a and b, in one pass (the first move
   compares its result with the labelling it started from). */
static void energy_pair(const dp_place_problem *m, const uint32_t *a, const uint32_t *b, int64_t *ea,
                        int64_t *eb) {
  int64_t x = 0, y = 0;
  int xbad = 0, ybad = 0;
  for (uint32_t v = 0; v < m->nvars; v++) {
    uint32_t la = a[v], lb = b[v];
    xbad |= la >= m->nlabels || !((m->allowed[v] >> la) & 1);
    ybad |= lb >= m->nlabels || !((m->allowed[v] >> lb) & 1);
    if (m->unary && !xbad) x = sat_add(x, m->unary[(size_t)v * m->nlabels + la]);
    if (m->unary && !ybad) y = sat_add(y, m->unary[(size_t)v * m->nlabels + lb]);
  }
  for (uint32_t k = 0; k < m->nnets && !(xbad && ybad); k++) {
    const dp_place_pin_range *nt = &m->nets[k];
    const uint32_t *pin = m->pins + nt->off;
    uint64_t ma = 0, mb = 0;
    for (uint32_t i = 0; i < nt->n; i++) { /* (& 63: a bad labelling's mask is not read) */
      ma |= (uint64_t)1 << (a[pin[i]] & 63);
      mb |= (uint64_t)1 << (b[pin[i]] & 63);
    }
    if (!xbad) x = sat_add(x, net_cost_of(m, nt, a[nt->src], ma));
    if (!ybad) y = sat_add(y, net_cost_of(m, nt, b[nt->src], mb));
  }
  *ea = xbad ? DP__FLOW_INF : x;
  *eb = ybad ? DP__FLOW_INF : y;
}

int64_t dp_place_energy_at(const dp_place_problem *m, const uint32_t *label, uint32_t v, uint32_t l) {
  /* (a labelling with v moved, read through a copy of the few labels that
     matter: v's own nets are found by a scan, fine for an explanation) */
  uint32_t *lab = dp_malloc((size_t)(m->nvars ? m->nvars : 1) * sizeof *lab);
  if (!lab) return -1;
  memcpy(lab, label, (size_t)m->nvars * sizeof *lab);
  lab[v] = l;
  int64_t e = 0;
  if (!((m->allowed[v] >> l) & 1)) e = DP__FLOW_INF;
  else if (m->unary) e = m->unary[(size_t)v * m->nlabels + l];
  for (uint32_t k = 0; k < m->nnets; k++) {
    const dp_place_pin_range *nt = &m->nets[k];
    int in = nt->src == v;
    for (uint32_t i = 0; i < nt->n && !in; i++) in = m->pins[nt->off + i] == v;
    if (in) e = sat_add(e, net_cost(m, nt, lab));
  }
  free(lab);
  return e;
}

/* ---- one expansion move ---- */

typedef struct mv {
  const dp_place_problem *m;
  const uint32_t *label;
  uint32_t alpha;
  uint32_t *state;   /* per variable: its node, ST_S or ST_T */
  dp__flow *g;
  int64_t scale;     /* every capacity times 2 where nets of two readers are three pair
                        terms of half their weight (move_net2), else 1 */
} mv;

/* A copy of net nt's value from label a to b, as the move's graph counts it. */
static int64_t copy_cost(const mv *c, const dp_place_pin_range *nt, uint32_t a, uint32_t b) {
  return dp_place_copy_cost(c->m, nt->w, a, b) * c->scale;
}

/* [p keeps and some reader is alpha] * w */
static void gadget_keep_to_alpha(mv *c, uint32_t p, const dp_place_pin_range *nt, int64_t w) {
  if (w <= 0 || p == ST_T) return;
  uint32_t nfree = 0, last = 0;
  for (uint32_t i = 0; i < nt->n; i++) {
    uint32_t st = c->state[c->m->pins[nt->off + i]];
    if (st == ST_T) { /* a reader is alpha whatever the move: [p keeps] * w */
      if (p != ST_S) dp__flow_terminal(c->g, p, 0, w);
      return;
    }
    if (st != ST_S) nfree++, last = st;
  }
  if (nfree == 0) return;
  if (nfree == 1) {
    if (p == ST_S) dp__flow_terminal(c->g, last, w, 0);
    else dp__flow_arc(c->g, p, last, w, 0);
    return;
  }
  uint32_t a = dp__flow_node(c->g);
  if (p == ST_S) dp__flow_terminal(c->g, a, w, 0);
  else dp__flow_arc(c->g, p, a, w, 0);
  for (uint32_t i = 0; i < nt->n; i++) {
    uint32_t st = c->state[c->m->pins[nt->off + i]];
    if (st != ST_S) dp__flow_arc(c->g, a, st, DP__FLOW_INF, 0);
  }
}

/* [p is alpha and some reader of label l keeps it] * w (p == ST_T: [some
   reader of label l keeps it] * w) */
static void gadget_kept_reader(mv *c, uint32_t p, const dp_place_pin_range *nt, uint32_t l, int64_t w) {
  if (w <= 0 || p == ST_S) return;
  uint32_t nfree = 0, last = 0;
  for (uint32_t i = 0; i < nt->n; i++) {
    uint32_t r = c->m->pins[nt->off + i], st = c->state[r];
    if (c->label[r] != l) continue;
    if (st == ST_S) { /* keeps l whatever the move: [p is alpha] * w */
      if (p != ST_T) dp__flow_terminal(c->g, p, w, 0);
      return;
    }
    nfree++, last = st;
  }
  if (nfree == 0) return;
  if (nfree == 1) {
    if (p == ST_T) dp__flow_terminal(c->g, last, 0, w);
    else dp__flow_arc(c->g, last, p, w, 0);
    return;
  }
  uint32_t b = dp__flow_node(c->g);
  for (uint32_t i = 0; i < nt->n; i++) {
    uint32_t r = c->m->pins[nt->off + i];
    if (c->label[r] == l) dp__flow_arc(c->g, c->state[r], b, DP__FLOW_INF, 0);
  }
  if (p == ST_T) dp__flow_terminal(c->g, b, 0, w);
  else dp__flow_arc(c->g, b, p, w, 0);
}

/* A net of one reader r: the terms move_net's gadgets give it, with their
   two arcs between the maker and r (p -> r of [p keeps and r switches],
   r -> p of [r keeps and p switches]) made as one pair, one arc each way:
   the cut's capacity is the same for every side of every node, so the
   minimum cut read (the least sink side) is too, on a graph with half the
   arcs of a chain of values. */
static void move_net1(mv *c, const dp_place_pin_range *nt) {
  const dp_place_problem *m = c->m;
  uint32_t r = m->pins[nt->off], lp = c->label[nt->src], lr = c->label[r], alpha = c->alpha;
  uint32_t ps = c->state[nt->src], rs = c->state[r];
  int64_t fwd = 0, back = 0;
  if (lp != alpha && ps != ST_T) { /* gadget_keep_to_alpha */
    int64_t w = copy_cost(c, nt, lp, alpha);
    if (w > 0 && rs != ST_S) {
      if (rs == ST_T) {
        if (ps != ST_S) dp__flow_terminal(c->g, ps, 0, w);
      } else if (ps == ST_S) {
        dp__flow_terminal(c->g, rs, w, 0);
      } else {
        fwd = w;
      }
    }
  }
  if (lr != alpha) { /* gadget_kept_reader for the reader's label (r is not ST_T) */
    int64_t a = lp != lr ? copy_cost(c, nt, lp, lr) : 0;
    int64_t b = copy_cost(c, nt, alpha, lr);
    if (ps == ST_T) {
      if (b > 0 && rs != ST_S) dp__flow_terminal(c->g, rs, 0, b);
    } else {
      if (a > 0 && rs != ST_S) dp__flow_terminal(c->g, rs, 0, a);
      if (ps != ST_S && b > a) {
        if (rs == ST_S) dp__flow_terminal(c->g, ps, b - a, 0);
        else back = b - a;
      }
    }
  }
  if (fwd || back) dp__flow_arc(c->g, ps, rs, fwd, back);
}

/* [a and b end on different labels] * w, for two of a net's variables
   (each a node, ST_S or ST_T). */
static void pair_term(mv *c, uint32_t a, uint32_t b, int64_t w) {
  if (a >= ST_T) {
    uint32_t t = a;
    a = b, b = t;
  }
  if (a >= ST_T) return; /* (two ends the move does not change: a constant) */
  if (b == ST_S) dp__flow_terminal(c->g, a, w, 0);      /* a pays on the sink side (alpha) */
  else if (b == ST_T) dp__flow_terminal(c->g, a, 0, w); /* a pays where it keeps its label */
  else dp__flow_arc(c->g, a, b, w, w);
}

/* A net of two readers whose three variables end the move on two labels
   at most (those among them other than alpha are one label) where a copy
   costs its weight w whatever its ends (c->scale 2): it costs w when the
   three are not all on one label, and then exactly two of their three
   pairs are on different labels; so it is three pair terms of w / 2 each
   (the graph's capacities doubled): no auxiliary node, where the gadgets
   make two and some six pairs of arcs. Every labelling of the move costs
   the same either way, so the least minimum cut read is the same. 1, or
   0 where it does not apply. */
static int move_net2(mv *c, const dp_place_pin_range *nt) {
  const dp_place_problem *m = c->m;
  uint32_t v[3] = {nt->src, m->pins[nt->off], m->pins[nt->off + 1]}, l = DP__NONE_ID;
  for (int i = 0; i < 3; i++) {
    uint32_t x = c->label[v[i]];
    if (x == c->alpha || x == l) continue;
    if (l != DP__NONE_ID) return 0;
    l = x;
  }
  uint32_t s0 = c->state[v[0]], s1 = c->state[v[1]], s2 = c->state[v[2]];
  pair_term(c, s0, s1, nt->w);
  pair_term(c, s0, s2, nt->w);
  pair_term(c, s1, s2, nt->w);
  return 1;
}

/* A net's cost in the move (place_solve.c's header). */
static void move_net(mv *c, const dp_place_pin_range *nt) {
  const dp_place_problem *m = c->m;
  if (nt->n == 1) {
    move_net1(c, nt);
    return;
  }
  if (nt->n == 2 && c->scale == 2 && move_net2(c, nt)) return;
  uint32_t lp = c->label[nt->src], ps = c->state[nt->src], alpha = c->alpha;
  if (lp != alpha) gadget_keep_to_alpha(c, ps, nt, copy_cost(c, nt, lp, alpha));
  uint64_t mask = reader_labels(m, nt, c->label) & ~((uint64_t)1 << alpha);
  for (uint32_t l = 0; mask; l++, mask >>= 1) {
    if (!(mask & 1)) continue;
    int64_t a = lp != l ? copy_cost(c, nt, lp, l) : 0;
    int64_t b = copy_cost(c, nt, alpha, l);
    if (ps == ST_T) {
      gadget_kept_reader(c, ST_T, nt, l, b);
    } else {
      gadget_kept_reader(c, ST_T, nt, l, a);
      if (ps != ST_S && b > a) gadget_kept_reader(c, ps, nt, l, b - a);
    }
  }
}

/* The side of each node of a move's graph: room made with the move's
   state array (one block: a large one asks for huge pages, two just below
   that size would not), its own block where a move makes more nodes. */
typedef struct sides { uint8_t *v; uint32_t cap; int own; } sides;

static int side_room(sides *sd, uint32_t nodes) {
  if (nodes <= sd->cap) return 0;
  if (sd->own) return dp_grow((void **)&sd->v, &sd->cap, nodes, 1);
  uint8_t *v = dp_malloc(nodes);
  if (!v) return -1;
  sd->v = v, sd->cap = nodes, sd->own = 1;
  return 0;
}

/* The move towards alpha without its graph, where every variable not on
   alpha may switch to it (none fixed elsewhere, alpha allowed to each)
   and copies alone cost, one cost per unit of weight (cuts_exact): then
   putting every variable on alpha costs 0, so the best labellings of the
   move are those that cost 0, each net's maker and readers on one label,
   so each component of the variables joined by nets on one label: alpha
   where the component has a variable on alpha already (an anchor) or two
   labels, and there either alpha or the label it has where it has one.
   The minimum cut read (its least sink side: what every minimum cut puts
   on alpha) is what every best labelling puts on alpha: the components
   that must be alpha, the others keeping their label. The cut is below
   the one that keeps every label (*better) exactly when the labelling
   costs more than 0, that is when some variable switches. Components by
   union-find over state (each variable's root, the least variable of its
   component, then its label after the move); a byte per root in side:
   the label its variables have (+ 1; MIXED: two), ANCHOR where one is on
   alpha. On a chain of values read from one annotation's device this is
   the whole move: no graph of a node per variable and an arc pair per
   reader. 1 (done), 0 (it does not apply) or -1. */
#define MIXED 127
#define ANCHOR 128

static uint32_t comp_find(uint32_t *up, uint32_t v) {
  while (up[v] != v) v = up[v] = up[up[v]]; /* (path halving) */
  return v;
}

/* May every variable not on alpha switch to it (none fixed elsewhere,
   alpha allowed to each)? */
static int all_may_switch(const dp_place_problem *m, const uint32_t *label, uint32_t alpha) {
  for (uint32_t v = 0; v < m->nvars; v++)
    if (label[v] != alpha && (m->fixed[v] != DP__NONE_ID || !((m->allowed[v] >> alpha) & 1))) return 0;
  return 1;
}

static int move_in_components(const dp_place_problem *m, const uint32_t *label, uint32_t alpha, uint32_t *state,
                              sides *side, int *better) {
  if (!all_may_switch(m, label, alpha)) return 0;
  if (side_room(side, m->nvars) < 0) return -1;
  uint32_t *up = state;
  uint8_t *cls = side->v;
  for (uint32_t v = 0; v < m->nvars; v++) up[v] = v;
  for (uint32_t k = 0; k < m->nnets; k++) {
    const dp_place_pin_range *nt = &m->nets[k];
    uint32_t a = comp_find(up, nt->src);
    for (uint32_t i = 0; i < nt->n; i++) {
      uint32_t b = comp_find(up, m->pins[nt->off + i]);
      if (a < b) up[b] = a;
      else if (b < a) up[a] = b, a = b;
    }
  }
  for (uint32_t v = 0; v < m->nvars; v++) { /* (a root is below its variables: found already) */
    uint32_t r = up[v] = up[up[v]];
    uint8_t *c = &cls[r];
    if (r == v) *c = 0;
    if (label[v] == alpha) *c |= ANCHOR;
    else if (!(*c & 127)) *c |= (uint8_t)(label[v] + 1);
    else if ((*c & 127) != label[v] + 1) *c = (uint8_t)((*c & ANCHOR) | MIXED);
  }
  int moved = 0;
  for (uint32_t v = 0; v < m->nvars; v++) {
    uint8_t c = cls[up[v]];
    int to_alpha = label[v] != alpha && ((c & ANCHOR) || (c & 127) == MIXED);
    moved |= to_alpha;
    state[v] = to_alpha ? alpha : label[v];
  }
  *better = moved;
  return 1;
}

/* The moves' arrays for their graphs' parts (move_in_parts), made at the
   first move that needs them: per variable the next variable of its part
   (vnext) and, at a part's least variable, its part's first net (nhead);
   per net the next net of its part (nnext). */
typedef struct parts {
  uint32_t *vnext, *nhead, *nnext;
  void *block;
  size_t bytes;
} parts;

/* Blocks the caller no longer needs, their pages touched already (a
   placement's: analysis' flows and its array of a variable per domain,
   taken from the graph it gave), handed out before new ones are made. */
typedef struct blocks { void *b[2]; size_t n[2]; } blocks;

/* A block of at least bytes: the smallest of bl's that holds them (taken
   from bl; *have its size), else a new one. */
static void *block_for(blocks *bl, size_t bytes, size_t *have) {
  int k = -1;
  for (int i = 0; i < 2; i++)
    if (bl->b[i] && bl->n[i] >= bytes && (k < 0 || bl->n[i] < bl->n[k])) k = i;
  if (k < 0) {
    *have = bytes;
    return dp_malloc(bytes ? bytes : 1);
  }
  void *b = bl->b[k];
  *have = bl->n[k];
  bl->b[k] = NULL, bl->n[k] = 0;
  return b;
}

static int parts_room(parts *pt, blocks *bl, const dp_place_problem *m) {
  if (pt->block) return 0;
  uint64_t bytes = (2 * (uint64_t)m->nvars + m->nnets) * sizeof(uint32_t);
  uint32_t *b = (size_t)bytes == bytes ? block_for(bl, (size_t)bytes, &pt->bytes) : NULL;
  if (!b) return -1;
  pt->block = b;
  pt->vnext = b, pt->nhead = b + m->nvars, pt->nnext = b + 2 * (size_t)m->nvars;
  return 0;
}

/* The part of net nt: the root of its first variable that may switch
   (after the roots are found), or DP__NONE_ID: none may (the net is a
   constant of the move). */
static uint32_t part_of(const dp_place_problem *m, const uint32_t *state, const dp_place_pin_range *nt) {
  if (state[nt->src] < ST_T) return state[nt->src];
  for (uint32_t i = 0; i < nt->n; i++) {
    uint32_t st = state[m->pins[nt->off + i]];
    if (st < ST_T) return st;
  }
  return DP__NONE_ID;
}

/* The parts of the move's graph: the variables that may switch (state[v]
   == v on entry; the others ST_S or ST_T), joined by the nets they share
   (union-find in state; a root is the least variable of its part, each
   parent below its child), then state[v] the root, each part's variables
   listed from its root in increasing order (vnext, built downwards) and
   its nets in order (nnext, from nhead at the root). */
static void find_parts(const dp_place_problem *m, uint32_t *state, parts *pt) {
  for (uint32_t k = 0; k < m->nnets; k++) {
    const dp_place_pin_range *nt = &m->nets[k];
    uint32_t a = state[nt->src] < ST_T ? comp_find(state, nt->src) : DP__NONE_ID;
    for (uint32_t i = 0; i < nt->n; i++) {
      uint32_t r = m->pins[nt->off + i];
      if (state[r] >= ST_T) continue;
      uint32_t b = comp_find(state, r);
      if (a == DP__NONE_ID) a = b;
      else if (a < b) state[b] = a;
      else if (b < a) state[a] = b, a = b;
    }
  }
  uint32_t *vnext = pt->vnext, *nhead = pt->nhead, *nnext = pt->nnext;
  for (uint32_t v = 0; v < m->nvars; v++) { /* (a parent is below its child: its root found already) */
    if (state[v] >= ST_T) continue;
    state[v] = state[state[v]];
    vnext[v] = nhead[v] = DP__NONE_ID;
  }
  for (uint32_t v = m->nvars; v-- > 0;) { /* (the list's head at the root's own next until v is the root) */
    uint32_t r = state[v];
    if (r >= ST_T || r == v) continue;
    vnext[v] = vnext[r];
    vnext[r] = v;
  }
  for (uint32_t k = m->nnets; k-- > 0;) {
    uint32_t r = part_of(m, state, &m->nets[k]);
    if (r == DP__NONE_ID) continue;
    nnext[k] = nhead[r];
    nhead[r] = k;
  }
}

/* The move's graph, one part at a time. A net's gadgets join only
   variables that may switch, all of one part, to each other and to the
   terminals (the others keep their label or are alpha whatever the move:
   ST_S, ST_T), so the move's graph is its parts' graphs side by side, no
   arc between two: its minimum cuts are theirs side by side, and the
   least sink side read is each part's least one. So each part's graph is
   made and cut alone in g, made again for the next: the cut's memory is
   the largest part's, in the cache, not a node per variable and net and
   arcs per pin of the whole problem touched fresh (branchy at 1,000,000
   calls: 5,001 parts of at most 784 variables where the one graph had
   1.27 million nodes and 4.6 million arcs). state: ST_S, ST_T or, for a
   variable that may switch, itself; then its node while its part is cut,
   then ST_T where it switches, else ST_S. *cut, *keep: the cuts found and
   those that keep every label, added up. 0, -1. */
static int move_in_parts(mv *c, sides *side, parts *pt, int64_t *cut, int64_t *keep) {
  const dp_place_problem *m = c->m;
  uint32_t *state = c->state;
  find_parts(m, state, pt);
  *cut = *keep = 0;
  for (uint32_t r = 0; r < m->nvars; r++) {
    if (state[r] != r) continue; /* (not a part's root, or its part is cut) */
    if (pt->nhead[r] == DP__NONE_ID && !m->unary) { /* (alone and in no net: costs nothing either
                                                        way, keeps its label) */
      state[r] = ST_S;
      continue;
    }
    /* (room as the one graph had it: a node per variable and net, two pairs of arcs
       per pin and net) */
    uint64_t nodes = 0, pairs = 0;
    for (uint32_t v = r; v != DP__NONE_ID; v = pt->vnext[v]) nodes++;
    for (uint32_t k = pt->nhead[r]; k != DP__NONE_ID; k = pt->nnext[k]) nodes++, pairs += 2 * ((uint64_t)m->nets[k].n + 1);
    dp__flow_reset(c->g);
    if (dp__flow_reserve(c->g, nodes, pairs) < 0) return -1;
    for (uint32_t v = r; v != DP__NONE_ID; v = pt->vnext[v]) {
      state[v] = dp__flow_node(c->g);
      if (m->unary) {
        const int64_t *u = &m->unary[(size_t)v * m->nlabels];
        dp__flow_terminal(c->g, state[v], u[c->alpha], u[c->label[v]]);
      }
    }
    for (uint32_t k = pt->nhead[r]; k != DP__NONE_ID; k = pt->nnext[k]) move_net(c, &m->nets[k]);
    /* the side of every node of the graph (auxiliary ones included) */
    if (side_room(side, dp__flow_count(c->g) + 1) < 0) return -1;
    int64_t x = dp__flow_solve(c->g, side->v);
    if (x < 0) return -1;
    *cut = sat_add(*cut, x);
    *keep = sat_add(*keep, dp__flow_all_source(c->g));
    for (uint32_t v = r; v != DP__NONE_ID; v = pt->vnext[v]) state[v] = side->v[state[v]] ? ST_T : ST_S;
  }
  return 0;
}

/* The best move towards alpha from label, into state (each variable's
   node in the move's graph while it is made, then its label after the
   move: one array, not two); *better: its cut costs less than the cut
   that keeps every label (cuts_exact). 0, or -1. */
static int move(const dp_place_problem *m, const uint32_t *label, uint32_t alpha, uint32_t *state,
                sides *side, dp__flow *g, parts *pt, blocks *bl, int exact, int *better) {
  if (exact && !m->pair && !m->unary) {
    int done = move_in_components(m, label, alpha, state, side, better);
    if (done) return done < 0 ? -1 : 0;
  }
  uint32_t nfree = 0;
  for (uint32_t v = 0; v < m->nvars; v++) {
    uint32_t l = label[v];
    if (l == alpha) state[v] = ST_T;
    else if (m->fixed[v] != DP__NONE_ID || !((m->allowed[v] >> alpha) & 1)) state[v] = ST_S;
    else state[v] = v, nfree++;
  }
  if (!nfree) { /* no variable can switch: every cut costs 0, and the labelling stays */
    memcpy(state, label, (size_t)m->nvars * sizeof *state);
    *better = 0;
    return 0;
  }
  if (parts_room(pt, bl, m) < 0) return -1;
  /* (capacities doubled where every copy costs its weight and nothing can
     saturate, cuts_exact: W <= DP__FLOW_INF / 8) */
  mv c = {m, label, alpha, state, g, exact && !m->pair && !m->unary ? 2 : 1};
  int64_t cut, keep;
  if (move_in_parts(&c, side, pt, &cut, &keep) < 0) return -1;
  *better = cut < keep;
  for (uint32_t v = 0; v < m->nvars; v++) state[v] = state[v] == ST_T ? alpha : label[v];
  return 0;
}

/* The starting labelling: fixed variables theirs, free ones the default
   label (or the first they may take). 1 when some variable may take none. */
static int start(const dp_place_problem *m, uint32_t *label) {
  int none = 0;
  for (uint32_t v = 0; v < m->nvars; v++) {
    uint64_t a = m->allowed[v];
    if (m->fixed[v] != DP__NONE_ID) label[v] = m->fixed[v];
    else if ((a >> m->dflt) & 1) label[v] = m->dflt;
    else if (a) label[v] = (uint32_t)__builtin_ctzll(a);
    else label[v] = DP__NONE_ID, none = 1;
  }
  return none;
}

/* May the move towards alpha be skipped, as one that cannot lower the
   energy? Yes when alpha is no variable's label, there are copies only (no
   unary costs, one cost per byte), and a move towards some label beta that
   every variable able to take alpha may take too is known to find nothing
   from this labelling: a move towards alpha puts some variables G on
   alpha; naming alpha beta instead never adds a copy (a net's set of reader
   labels other than its maker's can only shrink), and the result is a move
   towards beta from this labelling, which lowers nothing. */
static int idle_label(const dp_place_problem *m, const uint32_t *label, uint32_t alpha,
                      const uint64_t *same_since, uint64_t changes) {
  if (m->unary || m->pair) return 0;
  uint64_t beta = 0; /* labels whose move finds nothing from here */
  for (uint32_t l = 0; l < m->nlabels; l++)
    if (l != alpha && same_since[l] == changes) beta |= (uint64_t)1 << l;
  for (uint32_t v = 0; v < m->nvars && beta; v++) {
    if (label[v] == alpha) return 0;
    if (m->fixed[v] == DP__NONE_ID && ((m->allowed[v] >> alpha) & 1)) beta &= m->allowed[v];
  }
  return beta != 0;
}

/* May a move be judged by its cut instead of the energies of the two
   labellings (dp_place_energy: a pass over every net and pin, twice for
   the first move)? Yes when copies alone cost (no unary costs, one cost
   per unit of weight: no pair matrix), every variable starts on a label
   it may take, and W, the sum over the nets of weight times readers, is at
   most DP__FLOW_INF / 8 (checked as the largest weight times the pins).
   Then, for every labelling x a move can reach (a move puts a variable
   only on a label it may take):
   - E(x) <= sum of w * min(readers, K - 1) <= W: no sum saturates, the
     energies are exact;
   - the move's graph gets at most one gadget of weight w per net and label
     among its readers, and one for the maker (move_net): its finite
     capacities add up to at most 2W <= DP__FLOW_INF / 4, so no terminal
     capacity or flow saturates, and a cut across an infinite arc costs
     more than the cut that keeps every label (finite);
   - every term is exact with one cost per unit of weight (the header):
     cut(x) = E(x) - C, C the terms left out as constants, the same for
     every x of the move. The minimum cut is the next labelling's, and the
     cut with every node on the source side (each node's capacity to the
     sink: auxiliary nodes there cost nothing more when every reader keeps
     its label) is the current one's.
   So E(next) < E(cur) exactly when the minimum cut is below the cut that
   keeps every label (move's *better), the test the energies made: the same
   moves are taken, the same labelling results. (A tie, E(next) = E(cur),
   leaves next = label anyway: the cut keeping every label is then a
   minimum one, and the sink side read is the least.) Otherwise, and for
   the cost returned, the energies are counted. */
static int cuts_exact(const dp_place_problem *m, const uint32_t *label) {
  if (m->unary || m->pair) return 0;
  for (uint32_t v = 0; v < m->nvars; v++)
    if (label[v] >= m->nlabels || !((m->allowed[v] >> label[v]) & 1)) return 0;
  int64_t most = 0; /* (W <= the largest weight times the pins) */
  for (uint32_t k = 0; k < m->nnets; k++) most = m->nets[k].w > most ? m->nets[k].w : most;
  return !m->npins || most <= DP__FLOW_INF / 8 / m->npins;
}

/* After a move towards alpha from label, taken or not, where every move
   is exact (cuts_exact): the label beta whose move from the result finds
   nothing, or DP__NONE_ID. Where every variable of label is on alpha or
   on one other label beta, and none on alpha may take beta, the move
   towards alpha could give the variables any labelling of alpha and beta
   that they may take, and its result is a least one of those; a move
   towards beta from it gives one of those again. (Branchy with four
   targets: the move back towards the default label after the one towards
   the host, a cut of 283,000 variables, is not made.) */
static uint32_t spanned(const dp_place_problem *m, const uint32_t *label, uint32_t alpha) {
  uint32_t beta = DP__NONE_ID;
  uint64_t may = 0; /* the labels a variable on alpha may take instead */
  for (uint32_t v = 0; v < m->nvars; v++) {
    uint32_t l = label[v];
    if (l == alpha) {
      if (m->fixed[v] == DP__NONE_ID) may |= m->allowed[v];
    } else if (beta == DP__NONE_ID) {
      beta = l;
    } else if (l != beta) {
      return DP__NONE_ID;
    }
  }
  return beta != DP__NONE_ID && !((may >> beta) & 1) ? beta : DP__NONE_ID;
}

/* The blocks left at the end of a solve (the moves' arrays, the caller's
   not used): the largest to the given graph as its arcs' room and the
   next as its nodes' (the caller's next arrays, in pages touched already:
   place.c's decisions, or capture's nodes), the others freed. */
static void give_back(dp__flow *given, void **b, size_t *n, int k) {
  int best = -1, next = -1;
  for (int i = 0; i < k; i++) {
    if (!b[i]) continue;
    if (best < 0 || n[i] > n[best]) next = best, best = i;
    else if (next < 0 || n[i] > n[next]) next = i;
  }
  for (int i = 0; i < k; i++)
    if (i != best && i != next) free(b[i]);
  if (!given) {
    if (best >= 0) free(b[best]);
    if (next >= 0) free(b[next]);
    return;
  }
  size_t have;
  free(dp__flow_take(given, 1, &have)); /* (the parts' graph: small) */
  free(dp__flow_take(given, 0, &have));
  dp__flow_adopt(given, next >= 0 ? b[next] : NULL, next >= 0 ? n[next] : 0, best >= 0 ? b[best] : NULL,
                 best >= 0 ? n[best] : 0);
}

int dp_place_solve(dp_place_problem *m, uint32_t *label, int64_t *energy) {
  return dp__place_solve_in(m, label, energy, NULL);
}

int dp__place_solve_in(dp_place_problem *m, uint32_t *label, int64_t *energy, dp__flow *given) {
  if (m->oom) return -1;
  if (start(m, label)) return 1;
  if (m->nlabels == 1 || m->nvars == 0) {
    if (energy) *energy = dp_place_energy(m, label);
    return 0;
  }
  if (m->nvars >= ST_T) return -1; /* (a variable's number is its own mark in move) */
  int exact = cuts_exact(m, label);
  /* (the starting labelling's energy is counted with the first move's) */
  int64_t cur = 0;
  int counted = 0;
  /* The given graph's room, pages touched already (a placement's: analysis'
     flows, its array of a variable per domain), is the moves' arrays: the
     parts' graphs are small (move_in_parts) */
  blocks bl = {{NULL, NULL}, {0, 0}};
  if (given) {
    bl.b[0] = dp__flow_take(given, 0, &bl.n[0]);
    bl.b[1] = dp__flow_take(given, 1, &bl.n[1]);
  }
  /* move's state, then its labels; and the room for the sides of a node
     per variable and net */
  uint64_t room = (uint64_t)m->nvars + m->nnets + 1;
  if (room > UINT32_MAX) room = 0; /* (then the sides get a block of their own) */
  size_t nnext = 0;
  uint32_t *next = block_for(&bl, (size_t)m->nvars * sizeof *next + (size_t)room, &nnext);
  sides side = {next ? (uint8_t *)(next + m->nvars) : NULL, (uint32_t)room, 0};
  parts pt = {0};
  dp__flow *g = given ? given : dp__flow_new();
  int rc = -1;
  if (!next || !g) goto done;
  /* two labels: the one move from the default label to the other is exact */
  uint32_t rounds = m->nlabels == 2 ? 1 : 32;
  /* A move depends only on the labelling it starts from, so a move towards
     alpha is not computed again until another move has changed the
     labelling (changes counts them) when it changed nothing, or, when
     every move is exact (one cost per byte: no pair matrix), when it was
     taken: its result is the best expansion towards alpha of the labelling
     before it, and every expansion of the result is one of those. The last
     round, which only confirms, then costs no cut (bench/maxflow.c's
     branchy problem, four labels, 40,000 variables: 12 moves before, 10
     now). */
  uint64_t changes = 1, same_since[64] = {0};
  /* (the move towards the default label from the start finds nothing: a
     variable not on it may not take it) */
  if (m->dflt < m->nlabels) same_since[m->dflt] = changes;
  for (uint32_t round = 0, better = 1; round < rounds && better; round++) {
    better = 0;
    for (uint32_t alpha = 0; alpha < m->nlabels; alpha++) {
      if (m->nlabels == 2 && alpha == m->dflt) continue;
      if (same_since[alpha] == changes) continue;
      if (idle_label(m, label, alpha, same_since, changes)) {
        same_since[alpha] = changes;
        continue;
      }
      int cheaper;
      if (move(m, label, alpha, next, &side, g, &pt, &bl, exact, &cheaper) < 0) goto done;
      uint32_t beta = exact && rounds > 1 ? spanned(m, label, alpha) : DP__NONE_ID;
      int64_t e = 0;
      if (!exact) {
        if (counted) e = dp_place_energy(m, next);
        else energy_pair(m, label, next, &cur, &e), counted = 1;
        cheaper = e < cur;
      }
      if (cheaper) {
        memcpy(label, next, (size_t)m->nvars * sizeof *label);
        cur = e;
        better = 1;
        changes++;
        if (!m->pair) same_since[alpha] = changes;
      } else {
        same_since[alpha] = changes;
      }
      if (beta != DP__NONE_ID) same_since[beta] = changes;
    }
  }
  if (energy) *energy = counted ? cur : dp_place_energy(m, label);
  rc = 0;
done:
  if (side.own) free(side.v);
  if (g != given) dp__flow_free(g);
  void *left[4] = {next, pt.block, bl.b[0], bl.b[1]};
  size_t bytes[4] = {nnext, pt.bytes, bl.n[0], bl.n[1]};
  give_back(given, left, bytes, 4);
  return rc;
}
