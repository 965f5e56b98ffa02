using Tickwire;
using UnityEngine;

/// <summary>
/// Connects to a tickwire relay (for example the console relay of examples-csharp),
/// sends this player's input every frame on the sequenced channel, and counts the
/// other players' inputs the relay forwards. Attach it to any GameObject.
/// The per-frame path allocates nothing: preallocated buffers, struct events.
/// </summary>
public sealed class TickwireRelayClient : MonoBehaviour
{
    [SerializeField] private string serverAddress = "127.0.0.1:7777";

    private TwHost _host;
    private uint _server;
    private bool _connected;
    private uint _frame;
    private readonly byte[] _input = new byte[12];
    private readonly byte[] _inbox = new byte[TwConstants.MaxUnreliableSize];

    public long InputsFromOthers { get; private set; }

    private void Start()
    {
        try
        {
            _host = new TwHost("0.0.0.0:0");
            _server = _host.Connect(serverAddress);
        }
        catch (TickwireException e)
        {
            // Code and the library's message, e.g. a stale native library or a bad address.
            Debug.LogError("tickwire: " + e.Message);
            enabled = false;
        }
    }

    private void Update()
    {
        if (_connected)
        {
            _frame++;
            WriteU32(_input, 0, _frame);
            WriteU32(_input, 4, (uint)(Input.GetAxisRaw("Horizontal") * 1000f));
            _host.Send(_server, TwChannel.Sequenced, _input);
        }
        _host.Flush();

        TwEvent ev;
        while (_host.TryPollEvent(out ev))
        {
            switch (ev.Kind)
            {
                case TwEventKind.Connected:
                    _connected = true;
                    Debug.Log("tickwire: connected to " + ev.Data.Connected.GetAddress());
                    break;
                case TwEventKind.Disconnected:
                    _connected = false;
                    Debug.Log("tickwire: disconnected (" + ev.Data.Disconnected.Reason + ")");
                    break;
                case TwEventKind.Message:
                    int len;
                    if (_host.ReadMessage(_inbox, out len) == TwResult.Ok && ev.Data.Message.Channel == TwChannel.Sequenced)
                    {
                        InputsFromOthers++;
                    }
                    break;
                case TwEventKind.Fatal:
                    Debug.LogError("tickwire: " + ev.Data.Fatal.GetMessage());
                    break;
            }
        }
    }

    private void OnDestroy()
    {
        if (_host != null)
        {
            _host.Dispose(); // peers are told goodbye; blocks a few ms
        }
    }

    private static void WriteU32(byte[] b, int at, uint v)
    {
        b[at] = (byte)v;
        b[at + 1] = (byte)(v >> 8);
        b[at + 2] = (byte)(v >> 16);
        b[at + 3] = (byte)(v >> 24);
    }
}
