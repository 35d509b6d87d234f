/* devwords.h: internal to backends/cuda/: graph mode's run-time
 * parameters kept in device memory (devwords.c).
 *
 * A built-in whose run-time parameters change only the lengths of its
 * slices, not where they start, and whose kernel can read its counts from
 * device memory (DR_KFLAG_DEVICE_COUNTS: the element-wise ones), is
 * captured once at its largest counts with DrKLaunch.counts_dev pointing
 * at its words here. A new value then writes the node's counts into its
 * words (one small store on origin before the next launch, for every such
 * node of the change) and sets no graph node. Graph mode chooses the
 * nodes at setup (dr__cuda_devwords_open); streams mode launches with the
 * counts and never reads words. This part owns the words (device memory
 * of the first device) and the node-to-word map; launch.c widens the
 * bindings of the chosen nodes through it. */
#ifndef DAGRUN_BACKENDS_CUDA_DEVWORDS_H
#define DAGRUN_BACKENDS_CUDA_DEVWORDS_H

#include "backends/backend.h"
#include "backends/cuda/streams.h"

G_BEGIN_DECLS

typedef struct {
  const DrGraph *graph; /* borrowed */
  /* [n_nodes], or NULL when no node reads words: node v's first word (its
   * kernel's counts, indexed like its parameters), or DR_NONE. */
  guint32 *first;
  guint32 n_nodes, n_words;
  unsigned long long *words; /* device memory of device 0, [n_words] */
  guint64 *held;             /* [n_words]: what the words hold (the last store) */
  /* Nodes of the last change whose counts went to their words (the
   * report's param_update.device_reads). */
  guint32 last_reads;
} DrCudaDevWords;

/* Chooses the nodes that read their counts from device memory and
 * allocates and writes their words (on `origin`, stream ordered):
 * built-ins with DR_KFLAG_DEVICE_COUNTS on the first device whose every
 * parameter-dependent value is the end of a slice with a fixed start
 * (DrParamUse.fixed_begin), whose launch at its largest counts passes
 * its check; with DAGRUN_GRAPH_DEVICE_PARAMS=1 every such node, with
 * =auto those whose lengths vary at most twofold, else (the default)
 * none (devwords.c says why). None without the table's words_launch. `bases`: the buffers'
 * bases now. FALSE with `error` when an allocation or the store fails. */
gboolean dr__cuda_devwords_open(DrCudaDevWords *w, const DrGraph *g, const DrPlan *plan,
                                const DrCudaStreams *s, void *const *bases, GError **error);

/* Whether node v reads its counts from its words. */
gboolean dr__cuda_devwords_reads(const DrCudaDevWords *w, DrId v);

/* For a node that reads words (else nothing): `call`, just bound from the
 * graph's values now, becomes its launch at its largest counts (each
 * parameter-dependent slice to its planning extent's end) with
 * counts_dev at its words. FALSE with `error` when the check refuses. */
gboolean dr__cuda_devwords_widen(const DrCudaDevWords *w, DrId v, DrKernelCall *call, GError **error);

/* Writes the counts of each of `nodes` [n] (NULL: every node) that reads
 * words as the graph holds them now, where they differ from what the
 * words hold: one store
 * on `stream` (stream ordered: iterations launched before it read the old
 * words). Sets last_reads. FALSE with `error` when the store fails. */
gboolean dr__cuda_devwords_write(DrCudaDevWords *w, const DrId *nodes, guint32 n, cudaStream_t stream,
                                 GError **error);

/* Frees the words and the map (NULL-safe fields); the part is empty after. */
void dr__cuda_devwords_close(DrCudaDevWords *w);

G_END_DECLS

#endif
