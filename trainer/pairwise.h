/*
 * pairwise.h — the preference methods' losses, as TRL computes them, over the
 * log-probability sums of a micro-batch's rows.
 *
 * A micro-batch of P pairs is 2P rows: rows 0..P-1 chosen, P..2P-1 rejected
 * (TRL's concatenated_inputs order). Row i's sum s_i is the sum of the
 * log-probabilities of its T targets: memtrain's sequence is T+1 tokens, the
 * first the prompt and the T after it the completion, so TRL's completion mask
 * (and CPOTrainer's labels) count exactly these T tokens, and its averages
 * divide by T.
 */
#ifndef MT_PAIRWISE_H
#define MT_PAIRWISE_H

#include <stddef.h>

#include "settings/settings.h"

typedef struct mt_pair_hp {
    double beta, cpo_alpha, simpo_gamma;
} mt_pair_hp;

/* The mean loss over the P pairs (plus the chosen rows' NLL for simpo, cpo and
 * orpo), from the policy's sums pol[2P] and the reference's ref[2P] (dpo, ipo;
 * else NULL); for reward, pol holds the rows' scores, not sums. coef[2P]
 * receives d loss / d s_i. */
double mt_pair_loss(mp_method method, const mt_pair_hp *hp, size_t P, size_t T, const float *pol,
                    const float *ref, float *coef);

#endif
