#ifndef NAVD_THREAD_SLOTS_H
#define NAVD_THREAD_SLOTS_H

/// The number of slots each thread has (ScratchBuffers.Slot's cases fit in it).
#define NAVD_THREAD_SLOTS 4

/// This thread's slots: NAVD_THREAD_SLOTS pointers, all NULL when the thread starts, read and
/// written by the thread alone. A thread-local array: reaching it costs one instruction and a call,
/// where pthread_getspecific costs a lookup.
void **navd_thread_slots(void);

#endif
