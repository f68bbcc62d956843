/* streams/hash.h: uthash, configured for a library (internal).
 *
 * Include this instead of <uthash.h>. Two changes from uthash's defaults:
 *   - out of memory never calls exit(): an add that cannot get memory leaves the
 *     element out of the table, and PLM__HASH_ADDED(elt) says whether it went in;
 *   - keys of pointer size (every key plume uses: addresses and object pointers)
 *     are hashed with MurmurHash3's finaliser, cheaper than uthash's default and
 *     well spread for aligned addresses; other keys use uthash's default hash.
 * (uthash's bucket-expansion threshold stays at its default: lowering it makes
 * uthash judge its expansions ineffective and stop expanding, which turns chains
 * into lists; measured at 65 us per operation with 46,000 live blocks.)
 */
#ifndef PLUME_STREAMS_HASH_H
#define PLUME_STREAMS_HASH_H

#include <stdint.h>
#include <string.h>

#define HASH_NONFATAL_OOM 1
/* MurmurHash3's 64-bit finaliser: every bit of an address reaches the low bits
 * that select the bucket, aligned addresses included. */
#define HASH_FUNCTION(keyptr, keylen, hashv)                  \
  do {                                                        \
    if ((keylen) == sizeof(uint64_t)) {                       \
      uint64_t plm_hash_key_;                                 \
      memcpy(&plm_hash_key_, (keyptr), sizeof plm_hash_key_); \
      plm_hash_key_ ^= plm_hash_key_ >> 33;                   \
      plm_hash_key_ *= 0xff51afd7ed558ccdULL;                 \
      plm_hash_key_ ^= plm_hash_key_ >> 33;                   \
      plm_hash_key_ *= 0xc4ceb9fe1a85ec53ULL;                 \
      plm_hash_key_ ^= plm_hash_key_ >> 33;                   \
      (hashv) = (unsigned)plm_hash_key_;                      \
    } else {                                                  \
      HASH_JEN((keyptr), (keylen), (hashv));                  \
    }                                                         \
  } while (0)

#include <uthash.h>

/* After HASH_ADD*: whether `elt` is in the table (false when memory ran out). */
#define PLM__HASH_ADDED(elt) ((elt)->hh.tbl != NULL)

#endif /* PLUME_STREAMS_HASH_H */
