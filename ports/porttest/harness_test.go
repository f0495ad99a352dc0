package porttest

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRowIDs(t *testing.T) {
	t.Parallel()
	ids := RowIDs()
	t.Logf("%d rows", len(ids))
	require.GreaterOrEqual(t, len(ids), 60, "the suite must keep at least 60 rows")
	require.NoError(t, checkRowIDs(allRows()))
	for id := range slowRows {
		require.Contains(t, ids, id, "slowRows names a row that does not exist")
	}
	families := map[string]bool{}
	for _, id := range ids {
		fam, _, _ := strings.Cut(id, "/")
		families[fam] = true
	}
	for _, fam := range []string{
		"C-VAL-1", "C-VAL-2", "C-VAL-3", "C-PROV-1", "C-PROV-2", "C-PROV-3", "C-PROV-4", "C-PROV-5",
		"C-PROV-6", "C-PROV-7", "C-PROV-9", "C-ATT-1", "C-OWN-1", "C-REAP-1", "C-DES-1", "C-EXP-1",
		"C-EXP-2", "C-EXEC-1", "C-EXEC-2", "C-EXEC-3", "C-EXEC-4", "C-EXEC-5", "C-READ-1", "C-READ-2",
		"C-WRITE-1", "C-WRITE-2", "C-WRITE-3", "C-WRITE-4", "C-WRITE-5", "C-WRITE-6", "C-WRITE-7",
		"C-WRITE-8", "C-STREAM-1", "C-BULK-1", "C-BULK-2", "C-BULK-3", "C-HARD-1", "C-HARD-2",
		"C-HARD-3", "C-HARD-4", "B-7", "C-FS-1", "C-FS-2", "C-FS-3", "C-FS-4",
		"C-PORT-1",
	} {
		require.True(t, families[fam], "no row covers %s", fam)
	}
}

func TestCheckRowIDsRefuses(t *testing.T) {
	t.Parallel()
	for _, ids := range [][]string{{"C-X-1"}, {"C-X-1/"}, {"X-1/a"}, {"C-X-1/a", "C-X-1/a"}} {
		var rows []capRow
		for _, id := range ids {
			rows = append(rows, capRow{row: row{id: id}})
		}
		require.Error(t, checkRowIDs(rows), "%v", ids)
	}
}

// dockerOnly and counterparts are the rows that depend on a capability, by
// the capability's presence.
var (
	dockerOnly = []string{
		"C-HARD-1/cpu-clamped-to-endpoint", "C-HARD-2/pids-limit", "C-PROV-9/init-is-pid-1",
		"C-PROV-6/stopped-sandbox-restarted-with-files", "C-ATT-1/stopped-stays-stopped",
		"C-OWN-1/stopped-member", "C-EXP-1/stopped-sandbox",
	}
	agentOnly = []string{
		"C-EXEC-4/agent-killed-no-result", "C-EXEC-4/agent-stopped-times-out",
		"C-EXEC-4/agent-memory-and-descriptors-closed", "C-EXEC-4/agent-not-replaceable",
		"C-EXEC-4/agent-pids-exhausted-no-forged-success", "C-PORT-1/served-port-echoes",
		"C-PROC-1/background-output-stdin-pty", "C-PROC-1/outlives-the-agent-stream",
	}
	counterparts = []string{
		"C-HARD-1/cpu-limit-passed-through", "C-HARD-2/pids-limit-ignored", "C-PROV-9/keepalive-is-pid-1",
		"C-PORT-1/no-agent-is-classified", "C-PROC-1/no-agent-is-classified",
	}
)

func TestPlanWithoutCapabilities(t *testing.T) {
	t.Parallel()
	run, notApplicable := plan(allRows(), Capabilities{})
	ids := rowIDs(run)
	for _, id := range dockerOnly {
		require.NotContains(t, ids, id, "a Docker-only row is scheduled on a backend without its capability")
		require.True(t, logged(notApplicable, id, "Docker-only per CONTRACT "), "%s missing from %v", id, notApplicable)
	}
	for _, id := range agentOnly {
		require.NotContains(t, ids, id, "an agent row is scheduled on the engine-exec path")
		require.True(t, logged(notApplicable, id, "agent-only per issue 13"), "%s missing from %v", id, notApplicable)
	}
	for _, id := range counterparts {
		require.Contains(t, ids, id, "a counterpart is not scheduled on a backend without the capability")
	}
	require.Len(t, notApplicable, len(dockerOnly)+len(agentOnly))
	require.Len(t, run, len(RowIDs())-len(dockerOnly)-len(agentOnly))
	require.Contains(t, ids, "C-PROV-6/unpullable-image-is-a-clear-error", "the unpullable-image row runs everywhere")
}

func TestPlanWithEveryCapability(t *testing.T) {
	t.Parallel()
	run, notApplicable := plan(allRows(), Capabilities{EnforcesPidsLimit: true, ClampsCPU: true,
		ExportsStopped: true, StopsSandboxes: true, RunsInit: true, Agent: true, StagesLargeWrites: true})
	ids := rowIDs(run)
	for _, id := range slices.Concat(dockerOnly, agentOnly) {
		require.Contains(t, ids, id)
	}
	for _, id := range counterparts {
		require.NotContains(t, ids, id, "a counterpart is scheduled on a backend with the capability")
		require.True(t, logged(notApplicable, id, "counterpart for backends without "), "%s missing from %v", id, notApplicable)
	}
	require.Len(t, notApplicable, len(counterparts))
}

func TestPlanExportStoppedNeedsBoth(t *testing.T) {
	t.Parallel()
	run, _ := plan(allRows(), Capabilities{ExportsStopped: true})
	require.NotContains(t, rowIDs(run), "C-EXP-1/stopped-sandbox", "without StopsSandboxes there is no stopped sandbox to export")
	run, _ = plan(allRows(), Capabilities{StopsSandboxes: true})
	ids := rowIDs(run)
	require.NotContains(t, ids, "C-EXP-1/stopped-sandbox")
	require.Contains(t, ids, "C-ATT-1/stopped-stays-stopped")
}

func rowIDs(rows []row) []string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.id
	}
	return ids
}

// logged reports whether lines holds id's line with the reason's prefix.
func logged(lines []string, id, reason string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, id+": "+reason) {
			return true
		}
	}
	return false
}

func TestNewSuiteNamesMissingFields(t *testing.T) {
	t.Parallel()
	_, err := newSuite(Harness{Caps: Capabilities{StopsSandboxes: true}})
	require.Error(t, err)
	for _, f := range []string{"Provider", "Image", "NonRootImage", "WithTokens", "Foreign", "Stop"} {
		require.ErrorContains(t, err, f)
	}
}

func TestPatternHidesNeedle(t *testing.T) {
	t.Parallel()
	p := pattern("sleep 3600")
	require.NotContains(t, p, "sleep 3600")
	require.Equal(t, "'sleep'' 3600'", p)
}

func TestParseRoutes(t *testing.T) {
	t.Parallel()
	table := "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
		"eth0\t00000000\t010011AC\t0003\t0\t0\t0\t00000000\t0\t0\t0\n" +
		"eth0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
	require.Equal(t, []route{{"eth0", "00000000", "00000000"}, {"eth0", "000011AC", "0000FFFF"}}, parseRoutes(table))
	require.Empty(t, parseRoutes(strings.SplitN(table, "\n", 2)[0]+"\n"))
}

func TestGenReaderMatchesPayload(t *testing.T) {
	t.Parallel()
	b := make([]byte, 5000)
	n, err := newGenReader(5000, 9).Read(b)
	require.NoError(t, err)
	require.Equal(t, 5000, n)
	require.Equal(t, payload(5000, 9), b)
	seen := map[byte]bool{}
	for _, c := range payload(1<<16, 1) {
		seen[c] = true
	}
	require.Len(t, seen, 256, "the payload must hold every byte value")
}
