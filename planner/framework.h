/* framework.h — the framework profile an estimate follows. */
#ifndef FRAMEWORK_H
#define FRAMEWORK_H

#include "memplan.h"

/* The settings' framework, or the built-in PyTorch figures when none is set. */
const mp_framework *settings_framework(const mp_settings *s);

#endif
