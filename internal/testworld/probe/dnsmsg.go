package main

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
)

// A minimal DNS encoding (RFC 1035): one question, one A answer. Enough for
// a probe that only needs to know whether a resolver answered at all.

const (
	dnsHeaderLen = 12
	typeA        = 1
	classIN      = 1
)

// dnsQuery encodes a recursive query for name's A record.
func dnsQuery(id uint16, name string) ([]byte, error) {
	msg := make([]byte, dnsHeaderLen, 64)
	binary.BigEndian.PutUint16(msg[0:], id)
	binary.BigEndian.PutUint16(msg[2:], 0x0100) // RD
	binary.BigEndian.PutUint16(msg[4:], 1)      // QDCOUNT
	for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		if label == "" || len(label) > 63 {
			return nil, fmt.Errorf("dns: bad name %q", name)
		}
		msg = append(msg, byte(len(label)))
		msg = append(msg, label...)
	}
	msg = append(msg, 0, 0, typeA, 0, classIN)
	return msg, nil
}

// dnsQuestion returns the question section of a query and the name it asks
// for.
func dnsQuestion(q []byte) ([]byte, string, error) {
	if len(q) < dnsHeaderLen || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil, "", errShort
	}
	var labels []string
	i := dnsHeaderLen
	for {
		if i >= len(q) {
			return nil, "", errShort
		}
		n := int(q[i])
		if n == 0 {
			break
		}
		if n > 63 || i+1+n > len(q) {
			return nil, "", errShort
		}
		labels = append(labels, string(q[i+1:i+1+n]))
		i += 1 + n
	}
	end := i + 1 + 4 // root label, QTYPE, QCLASS
	if end > len(q) {
		return nil, "", errShort
	}
	return q[dnsHeaderLen:end], strings.Join(labels, "."), nil
}

// dnsAnswer answers query q with one A record for ip.
func dnsAnswer(q []byte, ip netip.Addr) ([]byte, error) {
	question, _, err := dnsQuestion(q)
	if err != nil {
		return nil, err
	}
	msg := make([]byte, dnsHeaderLen, 64)
	copy(msg, q[:2])                            // ID
	binary.BigEndian.PutUint16(msg[2:], 0x8180) // QR, RD, RA
	binary.BigEndian.PutUint16(msg[4:], 1)      // QDCOUNT
	binary.BigEndian.PutUint16(msg[6:], 1)      // ANCOUNT
	msg = append(msg, question...)
	a4 := ip.As4()
	msg = append(msg, 0xc0, dnsHeaderLen, 0, typeA, 0, classIN, 0, 0, 0, 60, 0, 4)
	return append(msg, a4[:]...), nil
}

// dnsAnswerA reads the A record of a response to query id. It expects
// the layout dnsAnswer writes: one question, then the answer whose RDATA
// ends the message.
func dnsAnswerA(resp []byte, id uint16) (netip.Addr, error) {
	if len(resp) < dnsHeaderLen+4 {
		return netip.Addr{}, errShort
	}
	if binary.BigEndian.Uint16(resp) != id {
		return netip.Addr{}, fmt.Errorf("dns: reply to another query")
	}
	if rcode := resp[3] & 0x0f; rcode != 0 {
		return netip.Addr{}, fmt.Errorf("dns: rcode %d", rcode)
	}
	if binary.BigEndian.Uint16(resp[6:]) == 0 {
		return netip.Addr{}, fmt.Errorf("dns: no answer")
	}
	addr, _ := netip.AddrFromSlice(resp[len(resp)-4:])
	return addr, nil
}
