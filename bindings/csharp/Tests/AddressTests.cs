// The address tests: host names (looked up off the caller's thread), IPv6 literals and the
// automatic bind ("": dual-stack), over real UDP on the loopback. No internet needed:
// "localhost" comes from the hosts file, and ".invalid" names never resolve (RFC 6761).
// Part of the test program (Program is partial).

using System;
using System.Collections.Generic;
using Tickwire;

namespace Tickwire.Tests
{
    internal static unsafe partial class Program
    {
        private static void RunAddressTests()
        {
            Run("addresses: Connect(\"localhost:port\") connects; a message sent before the lookup ends arrives", ConnectByLocalhost);
            Run("addresses: a name that does not resolve is Disconnected with ResolveFailed, Connect returns at once", UnresolvableName);
            Run("addresses: new TwHost(\"\") binds dual-stack and reaches IPv4 and IPv6 servers", AutomaticBind);
            Run("addresses: malformed names throw InvalidArgument naming the function", BadNames);
        }

        /// <summary>Flushes and polls every host until done() or the deadline; returns the events of hosts[i] in events[i].</summary>
        private static void PumpUntil(TwHost[] hosts, List<TwEvent>[] events, Func<bool> done, string what)
        {
            byte[] buf = new byte[4096];
            Timer sw = Timer.StartNew();
            while (!done())
            {
                if (sw.ElapsedMilliseconds > DeadlineMs)
                {
                    throw new TestFailure("timed out after " + DeadlineMs + " ms waiting for: " + what);
                }
                for (int i = 0; i < hosts.Length; i++)
                {
                    Equal(TwResult.Ok, hosts[i].Flush(), "flush");
                    TwEvent ev;
                    while (hosts[i].PollEvent(out ev) == TwResult.Ok)
                    {
                        events[i].Add(ev);
                        if (ev.Kind == TwEventKind.Message)
                        {
                            int len;
                            Equal(TwResult.Ok, hosts[i].ReadMessage(buf, out len), "read message");
                        }
                    }
                }
                System.Threading.Thread.Sleep(1);
            }
        }

        private static int PortOf(string address)
        {
            return int.Parse(address.Substring(address.LastIndexOf(':') + 1));
        }

        private static void ConnectByLocalhost()
        {
            TwHostConfig sc = TwHostConfig.Default();
            sc.MaxClients = 4;
            using (TwHost server = new TwHost(sc, "127.0.0.1:0"))
            using (TwHost client = new TwHost("127.0.0.1:0"))
            {
                Timer sw = Timer.StartNew();
                uint peer = client.Connect("localhost:" + PortOf(server.LocalAddress));
                Check(sw.ElapsedMilliseconds < 200, "Connect does not wait for the lookup");
                Check(peer != 0, "a peer id at once");
                Equal(TwResult.Ok, client.Send(peer, TwChannel.Reliable, Utf8("early")), "a send before the lookup has answered");
                var ev = new[] { new List<TwEvent>(), new List<TwEvent>() };
                PumpUntil(new[] { server, client }, ev,
                    () => HasEvent(ev[1], TwEventKind.Connected) && HasEvent(ev[0], TwEventKind.Message), "connected, message in");
                Equal(peer, FindEvent(ev[1], TwEventKind.Connected).Peer, "CONNECTED names the peer Connect returned");
                Equal(server.LocalAddress, FindEvent(ev[1], TwEventKind.Connected).Data.Connected.GetAddress(), "localhost is 127.0.0.1 here");
            }
        }

        private static void UnresolvableName()
        {
            using (TwHost client = new TwHost("127.0.0.1:0"))
            {
                Timer sw = Timer.StartNew();
                uint peer = client.Connect("game.example.invalid:7777");
                Check(sw.ElapsedMilliseconds < 200, "Connect does not wait for the lookup");
                var ev = new[] { new List<TwEvent>() };
                PumpUntil(new[] { client }, ev, () => HasEvent(ev[0], TwEventKind.Disconnected), "DISCONNECTED");
                TwEvent d = FindEvent(ev[0], TwEventKind.Disconnected);
                Equal(peer, d.Peer, "the peer Connect returned");
                Equal(TwDisconnectReason.ResolveFailed, d.Data.Disconnected.Reason, "reason");
                Equal(15, (int)TwDisconnectReason.ResolveFailed, "appended to the enum");
            }
        }

        /// <summary>Whether this machine has an IPv6 loopback (containers may not). Asks the library
        /// itself: System.Net would pull System.dll into the full-AOT run, which compiles mscorlib only.</summary>
        private static bool HasIpv6Loopback()
        {
            try
            {
                using (new TwHost("[::1]:0"))
                {
                    return true;
                }
            }
            catch (TickwireException)
            {
                return false;
            }
        }

        private static void AutomaticBind()
        {
            TwHostConfig sc = TwHostConfig.Default();
            sc.MaxClients = 4;
            var servers = new List<string> { "127.0.0.1:0" };
            if (HasIpv6Loopback())
            {
                servers.Add("[::1]:0");
            }
            foreach (string bind in servers)
            {
                using (TwHost server = new TwHost(sc, bind))
                using (TwHost client = new TwHost(""))
                {
                    string local = client.LocalAddress;
                    Check(local.StartsWith("[::]:", StringComparison.Ordinal) || local.StartsWith("0.0.0.0:", StringComparison.Ordinal),
                        "automatic bind: " + local);
                    uint peer = client.Connect(server.LocalAddress);
                    var ev = new[] { new List<TwEvent>(), new List<TwEvent>() };
                    PumpUntil(new[] { server, client }, ev, () => HasEvent(ev[1], TwEventKind.Connected), "connected to " + server.LocalAddress);
                    Equal(peer, FindEvent(ev[1], TwEventKind.Connected).Peer, "peer");
                }
            }
        }

        private static void BadNames()
        {
            using (TwHost client = new TwHost("127.0.0.1:0"))
            {
                foreach (string bad in new[] { "localhost", "localhost:0", "bad..name:80", "bad name:80", "[localhost]:80", "127.1:80" })
                {
                    TickwireException e = ThrowsTw(TwResult.InvalidArgument, () => client.Connect(bad), "Connect(\"" + bad + "\")");
                    Contains(e.NativeMessage, "tw_host_connect", "names the function");
                }
                ThrowsTw(TwResult.InvalidArgument, () => new TwHost("localhost:0"), "names are not looked up for binding");
            }
        }
    }
}
