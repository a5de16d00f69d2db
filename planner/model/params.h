/* params.h — parameter counts the estimate needs beyond memplan.h's. */
#ifndef PARAMS_H
#define PARAMS_H

#include "model/model.h"

/* Parameters that live in linear layers (what int8/NF4 quantise), whole model. */
double linear_params(const mp_model *m);

#endif
