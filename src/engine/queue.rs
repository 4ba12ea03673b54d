//! A blocking priority queue shared by several workers (synthesis queue, prover queue).

use std::collections::BinaryHeap;

use parking_lot::{Condvar, Mutex};

/// Ordering key: higher priority first, then older job, then lower partition index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    /// The job's class (`porep::Class`): a higher one goes first whatever the priority.
    pub class: u8,
    pub priority: i32,
    pub job_seq: u64,
    pub partition: usize,
}

impl Ord for Key {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.class
            .cmp(&o.class)
            .then(self.priority.cmp(&o.priority))
            .then(o.job_seq.cmp(&self.job_seq))
            .then(o.partition.cmp(&self.partition))
    }
}
impl Key {
    /// What decides who goes first across jobs: the class, then the priority.
    pub fn rank(&self) -> (u8, i32) {
        (self.class, self.priority)
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

struct Entry<T> {
    key: Key,
    item: T,
}
impl<T> PartialEq for Entry<T> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl<T> Eq for Entry<T> {}
impl<T> Ord for Entry<T> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key.cmp(&o.key)
    }
}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

struct Inner<T> {
    heap: BinaryHeap<Entry<T>>,
    closed: bool,
}

pub struct PriorityQueue<T> {
    inner: Mutex<Inner<T>>,
    ready: Condvar,
    taken: Condvar,
}

impl<T> Default for PriorityQueue<T> {
    fn default() -> Self {
        PriorityQueue {
            inner: Mutex::new(Inner {
                heap: BinaryHeap::new(),
                closed: false,
            }),
            ready: Condvar::new(),
            taken: Condvar::new(),
        }
    }
}

impl<T> PriorityQueue<T> {
    /// Adds an item; returns it back if the queue is closed.
    pub fn push(&self, key: Key, item: T) -> Result<(), T> {
        let mut g = self.inner.lock();
        if g.closed {
            return Err(item);
        }
        g.heap.push(Entry { key, item });
        drop(g);
        self.ready.notify_one();
        Ok(())
    }

    /// Takes the highest-priority item, waiting for one; `None` once closed and empty.
    pub fn pop(&self) -> Option<(Key, T)> {
        let mut g = self.inner.lock();
        loop {
            if let Some(e) = g.heap.pop() {
                drop(g);
                self.taken.notify_all();
                return Some((e.key, e.item));
            }
            if g.closed {
                return None;
            }
            self.ready.wait(&mut g);
        }
    }

    /// Takes the highest-priority item if there is one and `pred` accepts it; never waits.
    pub fn try_pop_if(&self, pred: impl Fn(&T) -> bool) -> Option<(Key, T)> {
        let mut g = self.inner.lock();
        if !g.heap.peek().is_some_and(|e| pred(&e.item)) {
            return None;
        }
        let e = g.heap.pop()?;
        drop(g);
        self.taken.notify_all();
        Some((e.key, e.item))
    }

    /// The class and priority of the item that would be taken next, if any.
    pub fn top_rank(&self) -> Option<(u8, i32)> {
        self.inner.lock().heap.peek().map(|e| e.key.rank())
    }

    /// Waits until fewer than `n` items are queued, the queue is closed, or `give_up(top)` says
    /// so (`top`: the rank of the item that would be taken next; called with the queue
    /// locked).
    pub fn wait_below(&self, n: usize, give_up: impl Fn(Option<(u8, i32)>) -> bool) {
        let mut g = self.inner.lock();
        while g.heap.len() >= n && !g.closed && !give_up(g.heap.peek().map(|e| e.key.rank())) {
            self.taken
                .wait_for(&mut g, std::time::Duration::from_millis(50));
        }
    }

    /// Takes out every queued item `pred` accepts (a cancelled job's), in no particular order.
    pub fn remove_if(&self, pred: impl Fn(&T) -> bool) -> Vec<T> {
        let mut g = self.inner.lock();
        if !g.heap.iter().any(|e| pred(&e.item)) {
            return Vec::new();
        }
        let (gone, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut g.heap)
            .into_vec()
            .into_iter()
            .partition(|e| pred(&e.item));
        g.heap = keep.into();
        drop(g);
        self.taken.notify_all();
        gone.into_iter().map(|e| e.item).collect()
    }

    /// Stops accepting items and wakes every waiter; returns what was still queued.
    pub fn close(&self) -> Vec<T> {
        let mut g = self.inner.lock();
        g.closed = true;
        let rest = std::mem::take(&mut g.heap)
            .into_iter()
            .map(|e| e.item)
            .collect();
        drop(g);
        self.ready.notify_all();
        self.taken.notify_all();
        rest
    }

    /// Calls `f` on every queued item, in no particular order, with the queue locked (`f`
    /// must not touch the queue).
    pub fn for_each(&self, mut f: impl FnMut(&Key, &T)) {
        for e in self.inner.lock().heap.iter() {
            f(&e.key, &e.item);
        }
    }

    pub fn len(&self) -> usize {
        self.inner.lock().heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_then_fifo_then_partition() {
        let q = PriorityQueue::default();
        let k = |priority, job_seq, partition| Key {
            class: 0,
            priority,
            job_seq,
            partition,
        };
        q.push(k(0, 1, 1), "j1p1").unwrap();
        q.push(k(0, 1, 0), "j1p0").unwrap();
        q.push(k(0, 0, 3), "j0p3").unwrap();
        q.push(k(5, 2, 0), "hi").unwrap();
        let order: Vec<_> = (0..4).map(|_| q.pop().unwrap().1).collect();
        assert_eq!(order, ["hi", "j0p3", "j1p0", "j1p1"]);
        // A higher class goes before any priority of a lower one.
        q.push(
            Key {
                class: 1,
                ..k(-5, 7, 0)
            },
            "post",
        )
        .unwrap();
        q.push(k(9, 1, 0), "porep").unwrap();
        assert_eq!(q.pop().unwrap().1, "post");
        assert_eq!(q.pop().unwrap().1, "porep");
        q.push(k(0, 9, 0), "left").unwrap();
        assert_eq!(q.close(), vec!["left"]);
        assert!(q.pop().is_none());
        assert!(q.push(k(0, 0, 0), "late").is_err());
    }

    #[test]
    fn remove_if_takes_only_matching_items_and_keeps_the_order() {
        let q = PriorityQueue::default();
        for (i, job) in [1u64, 2, 1, 3, 2].into_iter().enumerate() {
            let key = Key {
                class: 0,
                priority: 0,
                job_seq: job,
                partition: i,
            };
            q.push(key, (job, i)).unwrap();
        }
        let mut gone = q.remove_if(|&(job, _)| job == 2);
        gone.sort();
        assert_eq!(gone, vec![(2, 1), (2, 4)]);
        assert!(q.remove_if(|&(job, _)| job == 2).is_empty());
        let rest: Vec<_> = (0..3).map(|_| q.pop().unwrap().1).collect();
        assert_eq!(rest, vec![(1, 0), (1, 2), (3, 3)]);
    }

    #[test]
    fn wait_below_wakes_when_an_item_is_taken() {
        let q = std::sync::Arc::new(PriorityQueue::default());
        let k = Key {
            class: 0,
            priority: 0,
            job_seq: 0,
            partition: 0,
        };
        q.push(k, 1).unwrap();
        q.push(k, 2).unwrap();
        let q2 = q.clone();
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let asked2 = asked.clone();
        let t = std::thread::spawn(move || {
            // give_up is asked each time the waiter checks the queue: once it has been, the
            // waiter has seen two items, and only the pop below can let it return.
            q2.wait_below(2, |_| {
                asked2.store(true, std::sync::atomic::Ordering::SeqCst);
                false
            });
            q2.len()
        });
        crate::testing::until("the waiter to check the queue", || {
            asked.load(std::sync::atomic::Ordering::SeqCst)
        });
        assert!(
            !t.is_finished(),
            "wait_below returned with two items queued"
        );
        q.pop().unwrap();
        assert_eq!(crate::testing::join("the waiter", t), 1);
    }
}
