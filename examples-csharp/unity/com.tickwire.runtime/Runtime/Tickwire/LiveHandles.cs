using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Tickwire
{
    /// <summary>
    /// The native handles of one kind that are alive, so that DisposeAll can release them
    /// before a Unity domain reload or when play mode ends. Held weakly: a host or
    /// session the game forgot is still finalized (its handle destroys it). Thread-safe.
    /// </summary>
    internal sealed class LiveHandles
    {
        private readonly List<WeakReference> _items = new List<WeakReference>();

        /// <summary>
        /// Registers a new handle; keep the token to unregister it on Dispose. Entries of
        /// handles that were collected (a host or session the game forgot, finalized) or
        /// closed are dropped here, so the list holds about as many entries as there are
        /// live handles, however many were forgotten before.
        /// </summary>
        internal WeakReference Add(SafeHandle handle)
        {
            WeakReference token = new WeakReference(handle);
            lock (_items)
            {
                _items.RemoveAll(IsStale);
                _items.Add(token);
            }
            return token;
        }

        private static readonly Predicate<WeakReference> IsStale = entry =>
        {
            SafeHandle h = entry.Target as SafeHandle;
            return h == null || h.IsClosed;
        };

        internal void Remove(WeakReference token)
        {
            lock (_items)
            {
                _items.Remove(token);
            }
        }

        /// <summary>Releases every registered handle that is still reachable and forgets them all.</summary>
        internal void DisposeAll()
        {
            WeakReference[] live;
            lock (_items)
            {
                live = _items.ToArray();
                _items.Clear();
            }
            for (int i = 0; i < live.Length; i++)
            {
                SafeHandle h = live[i].Target as SafeHandle;
                if (h != null)
                {
                    h.Dispose();
                }
            }
        }

        /// <summary>Entries in the list, reachable or not (for tests).</summary>
        internal int Count
        {
            get
            {
                lock (_items)
                {
                    return _items.Count;
                }
            }
        }

        /// <summary>How many registered handles are reachable and not closed.</summary>
        internal int CountOpen()
        {
            lock (_items)
            {
                int n = 0;
                for (int i = 0; i < _items.Count; i++)
                {
                    SafeHandle h = _items[i].Target as SafeHandle;
                    if (h != null && !h.IsClosed)
                    {
                        n++;
                    }
                }
                return n;
            }
        }
    }
}
