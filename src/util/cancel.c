/*
 * cancel.c - the cancel flag of a call, set from any thread or a signal
 * handler (a lock-free atomic store, which C11 allows in a handler).
 */
#include "util/common.h"

void aptix_cancel(volatile sig_atomic_t *flag)
{
	if (flag)
		__atomic_store_n(flag, 1, __ATOMIC_RELAXED);
}
