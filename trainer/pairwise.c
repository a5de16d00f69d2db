/*
 * pairwise.c — the preference losses (see pairwise.h), at huggingface/trl@f2cd577:
 *   dpo   trl/trainer/dpo_trainer.py 1392-1393, 1430-1431: -logsigmoid(beta * delta),
 *         delta = (pc - rc) - (pr - rr), the sums over the completion (1348-1351)
 *   ipo   dpo_trainer.py 1436-1447: (delta' - 1/(2 beta))^2, delta' with each log-ratio
 *         divided by its completion's length
 *   cpo   trl/experimental/cpo/cpo_trainer.py 706-729: -logsigmoid(beta (pc - pr)), sums
 *         (get_batch_logps 751-789, average_log_prob only for ipo and simpo, 851-856)
 *   simpo the same on averages, minus simpo_gamma / beta (713-720)
 *         cpo and simpo: loss = mean + cpo_alpha * the chosen rows' token-mean NLL (845-849, 879)
 *   orpo  trl/experimental/orpo/orpo_trainer.py 693-701, 803-810, 850: NLL - beta mean(logsigmoid(
 *         log_odds)), log_odds = (ac - ar) - (log1mexp(ac) - log1mexp(ar)) on averages
 *   reward trl/trainer/reward_trainer.py 749-753: -logsigmoid(rc - rr) on the rows' scores
 *         (no margin column, center_rewards_coefficient None by default, reward_config.py 155)
 * Every loss is a mean over the P pairs; the NLL a mean over the P*T chosen tokens.
 */
#include "pairwise.h"

#include <math.h>
#include <stdbool.h>

static double softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
static double sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)); }
/* log(1 - exp(x)), x < 0 (trl/experimental/orpo/orpo_trainer.py 88-92) */
static double log1mexp(double x) { return x < -0.6931471805599453 ? log1p(-exp(x)) : log(-expm1(x)); }

double mt_pair_loss(mp_method method, const mt_pair_hp *hp, size_t P, size_t T, const float *pol,
                    const float *ref, float *coef)
{
    double beta = hp->beta, loss = 0.0, Td = (double)T, Pd = (double)P, nll_weight = 0.0;
    for (size_t j = 0; j < P; j++) {
        double pc = pol[j], pr = pol[P + j], dc = 0.0, dr = 0.0; /* d pair loss / d pc, pr */
        switch (method) {
        case MP_METHOD_DPO: {
            double z = beta * ((pc - ref[j]) - (pr - ref[P + j]));
            loss += softplus(-z); /* -logsigmoid(z) */
            dc = -beta * sigmoid(-z), dr = -dc;
            break;
        }
        case MP_METHOD_IPO: {
            double d = (pc - ref[j]) / Td - (pr - ref[P + j]) / Td - 1.0 / (2.0 * beta);
            loss += d * d;
            dc = 2.0 * d / Td, dr = -dc;
            break;
        }
        case MP_METHOD_CPO:
        case MP_METHOD_SIMPO: {
            bool simpo = method == MP_METHOD_SIMPO;
            double logits = simpo ? (pc - pr) / Td - hp->simpo_gamma / beta : pc - pr;
            double z = beta * logits;
            loss += softplus(-z);
            dc = -beta * sigmoid(-z) / (simpo ? Td : 1.0), dr = -dc;
            nll_weight = hp->cpo_alpha;
            break;
        }
        case MP_METHOD_REWARD: {
            double z = pc - pr;
            loss += softplus(-z);
            dc = -sigmoid(-z), dr = -dc;
            break;
        }
        case MP_METHOD_ORPO: {
            double ac = pc / Td, ar = pr / Td;
            double lo = (ac - ar) - (log1mexp(ac) - log1mexp(ar));
            loss += beta * softplus(-lo); /* -beta logsigmoid(lo) */
            double g = -beta * sigmoid(-lo);
            dc = g / (1.0 - exp(ac)) / Td, dr = -g / (1.0 - exp(ar)) / Td;
            nll_weight = 1.0;
            break;
        }
        default:
            break;
        }
        coef[j] = (float)(dc / Pd), coef[P + j] = (float)(dr / Pd);
    }
    loss /= Pd;
    if (nll_weight != 0.0) { /* the chosen rows' mean NLL over their P*T tokens */
        double sum = 0.0;
        for (size_t j = 0; j < P; j++) {
            sum += pol[j];
            coef[j] -= (float)(nll_weight / (Pd * Td));
        }
        loss += nll_weight * -sum / (Pd * Td);
    }
    return loss;
}
