/* SPDX-License-Identifier: MIT */
/*
 * Registered memory is shared by the application and the "RNIC". The transport reads and
 * writes it (payload to and from the socket, its CRC) the way a NIC's DMA does: on its own
 * schedule, ordered with the application's threads only through work requests and
 * completions, so an application may legitimately touch a region while a transfer runs
 * (perftest's latency tests use one buffer for both directions). ThreadSanitizer would call
 * every such overlap a data race of ours. Between sr_dma_*_begin and _end the current thread's
 * reads (or writes) are left out of its checking; everything else stays checked. Without
 * TSan these are empty.
 */
#ifndef SR_DMA_H
#define SR_DMA_H

/* gcc says TSan with __SANITIZE_THREAD__, clang through __has_feature */
#if defined(__SANITIZE_THREAD__)
#define SR_DMA_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SR_DMA_TSAN 1
#endif
#endif

#ifdef SR_DMA_TSAN
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#define sr_dma_read_begin() AnnotateIgnoreReadsBegin(__FILE__, __LINE__)
#define sr_dma_read_end() AnnotateIgnoreReadsEnd(__FILE__, __LINE__)
#define sr_dma_write_begin() AnnotateIgnoreWritesBegin(__FILE__, __LINE__)
#define sr_dma_write_end() AnnotateIgnoreWritesEnd(__FILE__, __LINE__)
#else
#define sr_dma_read_begin() ((void)0)
#define sr_dma_read_end() ((void)0)
#define sr_dma_write_begin() ((void)0)
#define sr_dma_write_end() ((void)0)
#endif

#endif
