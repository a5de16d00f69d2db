/* version.h — the one version of memplan, memtrain and memtop (each prints it
 * for --version; the man pages' headers state it too, tests/run-cli.sh holds
 * them equal). */
#ifndef MP_VERSION_H
#define MP_VERSION_H

#define MP_VERSION "0.1.0"

#endif
