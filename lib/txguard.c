/*
 * txguard.c - the calling thread's count of open database transactions
 * (txguard.h). A count, not a flag: a thread may hold two connections.
 */
#include "txguard.h"

static _Thread_local int open_transactions;

void txguard_enter(void)
{
	open_transactions++;
}

void txguard_leave(void)
{
	if (open_transactions > 0)
		open_transactions--;
}

bool txguard_open(void)
{
	return open_transactions > 0;
}
