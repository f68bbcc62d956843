/* pool/pool_poison.h: the pool's free memory poisoned for AddressSanitizer, in stream
 * order (internal; builds with AddressSanitizer only).
 *
 * Why. AddressSanitizer puts red zones around each malloc and poisons what free gives
 * back, so a read past a buffer or after its free is reported. A pool carves its blocks
 * out of large chunks that are one allocation for the sanitizer: a read one past a pooled
 * block, or of a block after plm_pool_free, touches memory the sanitizer sees as
 * allocated, and goes unseen. So the pool poisons, through the sanitizer's manual
 * interface (ASAN_POISON_MEMORY_REGION), every byte of its chunks that is not handed
 * out: free, cached and released blocks, free slab slots, and the slack of each block
 * handed out (from the end of the bytes asked for to the end of the block: the rounding
 * to 256 bytes or to the slot's class). Host code (the host backend's kernels, copies,
 * memsets) is checked by the sanitizer itself; the CUDA emulator's kernels consult its
 * shadow (emu/README.md). A GPU's device memory has no shadow that the device reads: on
 * a real GPU a sanitized build poisons nothing (`on` is false).
 *
 * Handing out unpoisons at once the bytes asked for (plm_pool_alloc's caller may
 * enqueue work on them as soon as it returns).
 *
 * Poisoning follows stream order. A block freed on stream S may still be used by work
 * enqueued on S before the free (and by work of other streams ordered before it), so
 * poisoning it in plm_pool_free would report that work. The free leaves a note instead:
 * its range, in the pool's list of notes, and a host function enqueued on S
 * (stream_enqueue_host) that poisons the range when S gets there, under the pool's
 * lock. A block handed out again meanwhile (on S at once, or on another stream behind a
 * wait) is someone's memory again: the handout, under the same lock, withdraws the
 * part of every note that overlaps the block before it unpoisons, so the host function
 * leaves the new owner's memory alone. (A note keeps one range: when a handout falls
 * strictly inside it, it keeps the larger side, and the other goes unpoisoned until the
 * next catch-all below.) The slack of a block handed out is poisoned by a note on the
 * allocating stream the same way: the block may come from a free whose work, which may
 * have touched those bytes, is still running on that stream or behind the wait. A new
 * slab's block gets a note too, for its free slots.
 *
 * Poisoned at once, as nothing can be using them: a new chunk; pages taken again
 * (mem_recommit may map fresh memory); a block that becomes safe for all because the
 * pool learned that its free completed (plm__pool_migrate, release_block_safe); slots
 * whose foreign free completed. That is also the catch-all for frees whose note went
 * unsent or was cut short. So every free block of the global index is poisoned, and so
 * is every released one (decommit takes only those).
 *
 * No note is sent, and the memory is poisoned only by the catch-all, or not at all when
 * it is reused on its stream first, for a free made in a host callback (where the
 * backend may make no call), for a free on a stream being captured into a graph (a host
 * function enqueued there would be a node of the graph: every replay would poison the
 * range, long after the pool handed it out to someone else; and the note is freed after
 * its first run), or when the enqueue fails. That can miss a report; it never makes a
 * false one.
 *
 * Unpoisoned: a chunk before it goes back upstream (mem_free, or the user's free), whose
 * memory other allocators may reuse.
 *
 * Locks: notes are made and withdrawn under the pool's `lock`, with the block moves that
 * cause them, and their host functions take it. Enqueueing is a backend call, which is
 * never made under `lock`: the notes a call makes wait in a list of the calling thread
 * until plm__pool_poison_send, which plm_pool_alloc and plm_pool_free make after every
 * lock is released.
 *
 * Cost: none without AddressSanitizer: the functions below are then empty inline ones.
 * With it, a host function per free and per handout with slack, a walk of the notes
 * still pending per handout, and shadow writes in proportion to the bytes freed and
 * handed out.
 */
#ifndef PLUME_POOL_POISON_H
#define PLUME_POOL_POISON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__SANITIZE_ADDRESS__)
#define PLM_POOL_POISON 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PLM_POOL_POISON 1
#endif
#endif
#ifndef PLM_POOL_POISON
#define PLM_POOL_POISON 0
#endif

typedef struct plm_pool plm_pool;
typedef struct pool_note pool_note;

/* What a pool keeps of poisoning. */
typedef struct pool_poison {
  bool on;          /* the pool's memory is host memory the sanitizer checks */
  pool_note *notes; /* notes whose host function has not run (doubly linked) */
} pool_poison;

#if PLM_POOL_POISON

/* At creation: whether this pool poisons (the host backend, or cuda on the emulator). */
void plm__pool_poison_init(plm_pool *pool);
/* At destruction, after the backend has finished every stream's work: free the notes
 * whose host function never ran. */
void plm__pool_poison_destroy(plm_pool *pool);
/* `lock` held: poison [addr, addr + bytes), which nothing can be using. */
void plm__pool_poison_now(plm_pool *pool, uintptr_t addr, size_t bytes);
/* `lock` held: [addr, addr + size) is handed out for `bytes` on the backend stream
 * `stream`: notes overlapping it are withdrawn, the bytes unpoisoned, and the slack
 * noted on the stream. */
void plm__pool_poison_handout(plm_pool *pool, uintptr_t addr, size_t size, size_t bytes,
                              void *stream);
/* `lock` held: [addr, addr + bytes) was freed on the backend stream `stream` (or becomes
 * free slots there): a note poisons it when the stream gets there. */
void plm__pool_poison_freed(plm_pool *pool, uintptr_t addr, size_t bytes, void *stream);
/* No lock held: enqueue the notes this thread made (see "Locks"). */
void plm__pool_poison_send(void);
/* `lock` not needed (nothing else refers to the chunk): unpoison a chunk going back
 * upstream. */
void plm__pool_unpoison_chunk(plm_pool *pool, uintptr_t addr, size_t bytes);

#else /* no AddressSanitizer: nothing to do */

static inline void plm__pool_poison_init(plm_pool *pool) {
  (void)pool;
}
static inline void plm__pool_poison_destroy(plm_pool *pool) {
  (void)pool;
}
static inline void plm__pool_poison_now(plm_pool *pool, uintptr_t addr, size_t bytes) {
  (void)pool;
  (void)addr;
  (void)bytes;
}
static inline void plm__pool_poison_handout(plm_pool *pool, uintptr_t addr, size_t size,
                                            size_t bytes, void *stream) {
  (void)pool;
  (void)addr;
  (void)size;
  (void)bytes;
  (void)stream;
}
static inline void plm__pool_poison_freed(plm_pool *pool, uintptr_t addr, size_t bytes,
                                          void *stream) {
  (void)pool;
  (void)addr;
  (void)bytes;
  (void)stream;
}
static inline void plm__pool_poison_send(void) {}
static inline void plm__pool_unpoison_chunk(plm_pool *pool, uintptr_t addr, size_t bytes) {
  (void)pool;
  (void)addr;
  (void)bytes;
}

#endif /* PLM_POOL_POISON */

#endif /* PLUME_POOL_POISON_H */
