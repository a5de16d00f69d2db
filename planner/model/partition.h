/* partition.h — the model's tensors as PyTorch's ZeroRedundancyOptimizer deals
 * them to ranks (whole tensors, largest first, to the lightest rank), and how
 * much of the model sits in tensors of a given size. */
#ifndef PARTITION_H
#define PARTITION_H

#include "model/model.h"

typedef struct tensor_split {
    double heaviest;      /* parameters on the most loaded rank */
    double largest_held;  /* the largest tensor on that rank */
    double largest;       /* the largest tensor of the model */
} tensor_split;

/* The split of the model's parameters over `ranks` ranks (1: the whole model on one). */
void whole_tensor_split(const mp_model *m, int64_t ranks, tensor_split *out);
/* The tensor list this thread keeps for the last model asked, let go. */
void partition_release(void);
/* The largest tensor of one layer (a linear weight; each expert's apart). */
double largest_layer_tensor(const mp_model *m);
/* The share of the model's parameters in tensors of at least min_numel elements. */
double share_in_tensors_of_at_least(const mp_model *m, double min_numel);

#endif
