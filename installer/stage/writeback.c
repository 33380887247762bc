// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "stage/writeback.h"

static void *writeback_main(void *ud)
{
	struct writeback *w = ud;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		int fd;

		while (w->head == w->tail && !w->done)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->head == w->tail)
			break;
		fd = w->fd[w->tail++ % WRITEBACK_QUEUE];
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
		(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
		close(fd);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

void writeback_start(struct writeback *w)
{
	*w = (struct writeback){0};
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->started = pthread_create(&w->thread, NULL, writeback_main, w) == 0;
}

void writeback_push(struct writeback *w, int fd)
{
	int copy;

	if (!w || !w->started)
		return;
	pthread_mutex_lock(&w->lock);
	if (w->head - w->tail < WRITEBACK_QUEUE && (copy = fcntl(fd, F_DUPFD_CLOEXEC, 3)) >= 0) {
		w->fd[w->head++ % WRITEBACK_QUEUE] = copy;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
}

void writeback_stop(struct writeback *w)
{
	if (w->started) {
		pthread_mutex_lock(&w->lock);
		w->done = true;
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
		pthread_join(w->thread, NULL);
	}
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
}
