using System.Security.Cryptography.X509Certificates;
using System.Text;

namespace NatsBroker.Tls;

/// <summary>
/// A verified client certificate's identities for <c>verify_and_map</c>, in nats-server's order
/// (server/auth.go checkClientTLSCertSubject): e-mail addresses, DNS names, URIs, then the subject as Go's
/// pkix.Name prints it (RFC 2253 order, short attribute names, no spaces: <c>CN=alice,OU=dev,O=Acme</c>).
/// </summary>
public static class CertificateIdentity
{
    private static readonly Dictionary<string, string> ShortNames = new(StringComparer.Ordinal)
    {
        ["2.5.4.3"] = "CN", ["2.5.4.11"] = "OU", ["2.5.4.10"] = "O", ["2.5.4.7"] = "L", ["2.5.4.8"] = "ST",
        ["2.5.4.6"] = "C", ["2.5.4.9"] = "STREET", ["2.5.4.17"] = "POSTALCODE", ["2.5.4.5"] = "SERIALNUMBER",
    };

    public static List<string> MapCandidates(X509Certificate2 cert)
    {
        var result = new List<string>();
        var san = cert.Extensions.OfType<X509SubjectAlternativeNameExtension>().FirstOrDefault();
        var emails = new List<string>();
        var uris = new List<string>();
        if (san is not null)
        {
            // EnumerateDnsNames covers DNS; e-mail (rfc822Name) and URI are read from the raw extension.
            ReadRawSan(san.RawData, emails, uris);
            result.AddRange(emails);
            result.AddRange(san.EnumerateDnsNames());
            result.AddRange(uris);
        }
        var subject = GoSubject(cert.SubjectName);
        if (subject.Length > 0) result.Add(subject);
        return result;
    }

    /// <summary>Go's pkix.Name.String(): RDNs last-to-first, "+"-joined multi-valued, ',' between RDNs.</summary>
    public static string GoSubject(X500DistinguishedName name)
    {
        var sb = new StringBuilder();
        foreach (var rdn in name.EnumerateRelativeDistinguishedNames(reversed: true))
        {
            if (sb.Length > 0) sb.Append(',');
            var oid = rdn.GetSingleElementType().Value ?? "";
            var value = rdn.GetSingleElementValue() ?? "";
            sb.Append(ShortNames.TryGetValue(oid, out var s) ? s : oid).Append('=').Append(Escape(value));
        }
        return sb.ToString();
    }

    /// <summary>RFC 2253 escaping as Go's attributeTypeAndValue does for the common characters.</summary>
    private static string Escape(string v)
    {
        var sb = new StringBuilder(v.Length);
        for (int i = 0; i < v.Length; i++)
        {
            char c = v[i];
            bool escape = c is ',' or '+' or '"' or '\\' or '<' or '>' or ';'
                || (i == 0 && c is ' ' or '#') || (i == v.Length - 1 && c == ' ');
            if (escape) sb.Append('\\');
            sb.Append(c);
        }
        return sb.ToString();
    }

    /// <summary>GeneralNames (RFC 5280): [1] rfc822Name and [6] uniformResourceIdentifier are IA5Strings.</summary>
    private static void ReadRawSan(byte[] raw, List<string> emails, List<string> uris)
    {
        try
        {
            var reader = new System.Formats.Asn1.AsnReader(raw, System.Formats.Asn1.AsnEncodingRules.DER);
            var seq = reader.ReadSequence();
            while (seq.HasData)
            {
                var tag = seq.PeekTag();
                if (tag.TagClass == System.Formats.Asn1.TagClass.ContextSpecific && tag.TagValue is 1 or 6)
                {
                    var text = Encoding.ASCII.GetString(seq.ReadOctetString(tag));
                    (tag.TagValue == 1 ? emails : uris).Add(text);
                }
                else
                {
                    seq.ReadEncodedValue();
                }
            }
        }
        catch (System.Formats.Asn1.AsnContentException)
        {
            // A malformed SAN contributes nothing; the subject is still tried.
        }
    }
}
