// SPDX-License-Identifier: Apache-2.0
#include "util/tail.h"

void tail_init(struct tail *t)
{
	*t = (struct tail){.state = TAIL_WRITING};
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
}

void tail_destroy(struct tail *t)
{
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
}

void tail_written(struct tail *t, uint64_t written)
{
	pthread_mutex_lock(&t->lock);
	if (written < t->consumed)
		t->stale = true;
	t->written = written;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

void tail_finish(struct tail *t, enum tail_state state)
{
	pthread_mutex_lock(&t->lock);
	t->state = state;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

int64_t tail_claim(struct tail *t, uint64_t off, uint64_t max)
{
	int64_t r = 0;

	pthread_mutex_lock(&t->lock);
	while (!t->stale && t->state == TAIL_WRITING && t->written <= off)
		pthread_cond_wait(&t->cond, &t->lock);
	if (t->stale || t->state == TAIL_FAILED) {
		r = -1;
	} else if (t->written > off) {
		uint64_t n = t->written - off < max ? t->written - off : max;

		if (off + n > t->consumed)
			t->consumed = off + n;
		r = (int64_t)n;
	}
	pthread_mutex_unlock(&t->lock);
	return r;
}

enum tail_state tail_reader_done(struct tail *t, bool *ret_stale)
{
	enum tail_state s;

	pthread_mutex_lock(&t->lock);
	while (t->state == TAIL_WRITING)
		pthread_cond_wait(&t->cond, &t->lock);
	s = t->state;
	*ret_stale = t->stale;
	pthread_mutex_unlock(&t->lock);
	return s;
}
