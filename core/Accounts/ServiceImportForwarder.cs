using System.Buffers;
using System.Globalization;
using System.Text;
using NatsBroker.Configuration;
using NatsBroker.Protocol;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.Accounts;

/// <summary>A publisher whose round-trip time nats-server reports in <c>Nats-Request-Info</c> (client connections).</summary>
public interface IRequester
{
    TimeSpan Rtt { get; }

    /// <summary>CONNECT asked for no_responders (with headers): a request nobody serves gets a 503 status back.</summary>
    bool WantsNoResponders { get; }
}

/// <summary>
/// A service import: subscribed in the importer's router on the local subject; a request is republished into the
/// exporter's router on the exported subject, its reply replaced by a <c>_R_.</c> subject of the exporter's
/// <see cref="ServiceResponses"/>, which carries the responses back to the original reply in the importer
/// (server/accounts.go addServiceImport / processServiceImport). Like nats-server 2.9 it adds a
/// <c>Nats-Request-Info: {"acc":"&lt;importer&gt;","rtt":&lt;ns&gt;}</c> header to the request.
/// </summary>
internal sealed class ServiceImportForwarder : ISubscriber
{
    private static readonly byte[] EmptyHeader = "NATS/1.0\r\n"u8.ToArray();

    private readonly Account _importer;
    private readonly Account _exporter;
    private readonly SubjectTransform _map;
    private readonly ServiceResponseType _responseType;
    // Set when the export tracks latency (server/accounts.go serviceImport.latency); null costs one check per request.
    private readonly LatencySampler? _latency;

    public ServiceImportForwarder(Account importer, Account exporter, string localSubject, string remoteSubject, ServiceResponseType responseType,
        LatencySampler? latency = null)
    {
        _importer = importer;
        _exporter = exporter;
        _responseType = responseType;
        _latency = latency;
        _map = new SubjectTransform(localSubject, remoteSubject);
    }

    /// <summary>The account that serves the imported subject.</summary>
    internal Account Exporter => _exporter;

    /// <summary>
    /// The exporter's subject a literal <paramref name="subject"/> of the importer becomes through this import; null
    /// when the import does not cover it.
    /// </summary>
    internal string? MapLocal(string subject, string localSubject) =>
        SubjectSubset.IsSubsetOf(subject, localSubject) ? Encoding.UTF8.GetString(_map.Map(Encoding.UTF8.GetBytes(subject))) : null;

    public DeliveryOutcome Deliver(Subscription sub, ref RoutedMessage msg, DeliveryBatch batch)
    {
        ReadOnlySpan<byte> subject = _map.Map(msg.Subject);
        // Requests cross accounts rarely compared with plain messages; building the header allocates a pooled buffer.
        var info = Encoding.ASCII.GetBytes(string.Create(CultureInfo.InvariantCulture,
            $"Nats-Request-Info: {{\"acc\":\"{JsonEscape(_importer.Name)}\",\"rtt\":{(msg.Origin is IRequester r ? (long)(r.Rtt.TotalMilliseconds * 1_000_000) : 0)}}}\r\n"));
        var oldHeader = msg.HeaderSize > 0 ? msg.Payload.Slice(0, msg.HeaderSize - 2) : new ReadOnlySequence<byte>(EmptyHeader);
        var body = msg.Body;
        int headerSize = (int)oldHeader.Length + info.Length + 2;
        int total = headerSize + (int)body.Length;
        var rented = ArrayPool<byte>.Shared.Rent(Math.Max(1, total));
        try
        {
            oldHeader.CopyTo(rented);
            info.CopyTo(rented, (int)oldHeader.Length);
            rented[headerSize - 2] = (byte)'\r';
            rented[headerSize - 1] = (byte)'\n';
            body.CopyTo(rented.AsSpan(headerSize));
            var payload = new ReadOnlySequence<byte>(rented, 0, total);
            // client.go processServiceImport: sampled before the request goes on; a sampled request without a reply is a 400.
            var tracking = _latency?.Sample(ref msg);
            if (msg.Reply.IsEmpty)
            {
                tracking?.BadRequest(batch);
                _exporter.Router.Publish(msg.Origin, subject, default, headerSize, payload, null, batch);
                return DeliveryOutcome.Delivered;
            }
            var responses = _exporter.Responses;
            var (reply, id) = responses.Add(_importer, msg.Reply, _responseType, tracking);
            if (!_exporter.Router.Publish(msg.Origin, subject, reply, headerSize, payload, null, batch))
            {
                responses.Remove(id); // nobody serves it: keep no mapping for a response that cannot come
                tracking?.NoDelivery(batch);
                // The requester's own subscriptions see the 503 a plain request would get (nats-server 2.10
                // processServiceImport: no responders across an import).
                // Its Nats-Subject is the subject the requester published on (processServiceImport restores c.pa).
                if (msg.Origin is IRequester { WantsNoResponders: true }) PublishNoResponders(ref msg, batch);
            }
            return DeliveryOutcome.Delivered;
        }
        finally
        {
            // Deliveries copy synchronously, so the buffer can go back now.
            ArrayPool<byte>.Shared.Return(rented);
        }
    }

    private void PublishNoResponders(ref RoutedMessage msg, DeliveryBatch batch)
    {
        int len = ProtocolWriter.NoRespondersHeaderLength(msg.Subject.Length);
        var status = ArrayPool<byte>.Shared.Rent(len);
        try
        {
            ProtocolWriter.WriteNoRespondersHeader(status, msg.Subject);
            _importer.Router.Publish(null, msg.Reply, default, len, new ReadOnlySequence<byte>(status, 0, len), null, batch);
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(status); // deliveries copy synchronously
        }
    }

    private static string JsonEscape(string s) => System.Text.Json.JsonEncodedText.Encode(s).ToString();
}
