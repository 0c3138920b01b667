#include "thread_slots.h"

static __thread void *slots[NAVD_THREAD_SLOTS];

void **navd_thread_slots(void) { return slots; }
