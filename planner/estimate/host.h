/* host.h — host RAM next to the device estimate. */
#ifndef HOST_H
#define HOST_H

#include "estimate/estimate.h"
#include "model/model.h"
#include "settings/settings.h"

/* Fill host_bytes and host_data_bytes: the data loader, pinned buffers and
 * `offloaded` bytes of states; adds the loader's term with explain. */
void host_model(const mp_model *m, const mp_settings *s, mp_estimate *e, double offloaded,
                bool explain);

#endif
