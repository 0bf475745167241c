package groups_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/toolkit"
)

// domains are the 100 groups of the 1,000-tool fixture: the group's name,
// the thing its tools act on, and its description.
var domains = [100][3]string{
	{"calendar", "event", "Calendar events, meetings and invitations."},
	{"email", "message", "Send and read email messages in mailboxes."},
	{"billing", "invoice", "Invoices, payments and refunds for customers."},
	{"containers", "pod", "Kubernetes pods, deployments and container images."},
	{"newsletter", "campaign", "Newsletters sent by email to subscribers."},
	{"crm", "contact", "Customer relationship records: leads, contacts, accounts."},
	{"tickets", "ticket", "Support tickets, their priority and assignee."},
	{"wiki", "page", "Team wiki pages and their revision history."},
	{"git", "commit", "Git repositories: commits, branches, pull requests."},
	{"ci", "pipeline", "Continuous integration pipelines and build jobs."},
	{"dns", "record", "Domain name records: A, CNAME, MX, TXT."},
	{"storage", "bucket", "Object storage buckets and blobs."},
	{"database", "table", "SQL database tables, rows and queries."},
	{"metrics", "dashboard", "Monitoring metrics, dashboards and alerts."},
	{"logs", "stream", "Application log streams and log search."},
	{"payroll", "payslip", "Employee salaries, payslips and tax withholding."},
	{"hr", "employee", "Employee records, onboarding and time off."},
	{"recruiting", "candidate", "Job openings, candidates and interviews."},
	{"inventory", "item", "Warehouse stock levels and items."},
	{"shipping", "shipment", "Parcel shipments, carriers and tracking numbers."},
	{"orders", "order", "Customer orders, carts and checkout."},
	{"catalog", "product", "Product catalog: prices, variants, photos."},
	{"reviews", "review", "Customer product reviews and ratings."},
	{"chat", "channel", "Team chat channels and direct messages."},
	{"video", "meeting", "Video conference rooms and recordings."},
	{"docs", "document", "Shared word-processing documents and comments."},
	{"sheets", "spreadsheet", "Spreadsheets, cells and formulas."},
	{"slides", "presentation", "Slide decks and presentations."},
	{"drive", "file", "Cloud drive files and folders."},
	{"photos", "album", "Photo albums and image tagging."},
	{"maps", "route", "Maps, driving directions and routes."},
	{"weather", "forecast", "Weather forecasts and severe weather warnings."},
	{"travel", "booking", "Flight and hotel bookings and itineraries."},
	{"expenses", "report", "Expense reports, receipts and reimbursements."},
	{"accounting", "ledger", "General ledger, journal entries and balances."},
	{"tax", "return", "Tax returns, filings and deadlines."},
	{"banking", "transfer", "Bank accounts, balances and wire transfers."},
	{"crypto", "wallet", "Cryptocurrency wallets and blockchain transactions."},
	{"stocks", "portfolio", "Stock quotes, trades and investment portfolios."},
	{"insurance", "policy", "Insurance policies and claims."},
	{"legal", "contract", "Contracts, clauses and e-signatures."},
	{"compliance", "audit", "Compliance audits, controls and evidence."},
	{"security", "vulnerability", "Security vulnerabilities, scans and patches."},
	{"identity", "user", "User accounts, passwords and single sign-on."},
	{"permissions", "role", "Access roles and permission grants."},
	{"secrets", "secret", "API keys, secrets and certificates in a vault."},
	{"network", "firewall", "Firewall rules, subnets and load balancers."},
	{"vm", "instance", "Virtual machine instances and disks."},
	{"serverless", "function", "Serverless functions and their triggers."},
	{"queue", "topic", "Message queues, topics and subscriptions."},
	{"cache", "key", "In-memory cache keys and eviction."},
	{"search", "index", "Full-text search indexes and relevance tuning."},
	{"analytics", "funnel", "Product analytics: funnels, cohorts, retention."},
	{"experiments", "experiment", "A/B experiments and feature flags."},
	{"surveys", "survey", "Customer surveys and their responses."},
	{"forms", "form", "Web forms and their submissions."},
	{"cms", "article", "Website articles, blog posts and publishing."},
	{"seo", "keyword", "Search engine rankings and keywords."},
	{"ads", "ad", "Advertising campaigns, budgets and bids."},
	{"social", "post", "Social media posts and scheduling."},
	{"sms", "text", "SMS text messages and phone numbers."},
	{"voice", "call", "Phone calls, voicemail and call recordings."},
	{"translation", "translation", "Translate text between languages."},
	{"ocr", "scan", "Optical character recognition of scanned paper."},
	{"pdf", "pdf", "PDF merging, splitting and watermarking."},
	{"images", "image", "Image resizing, cropping and format conversion."},
	{"audio", "track", "Audio tracks: transcoding and transcription."},
	{"music", "playlist", "Music playlists and songs."},
	{"podcasts", "episode", "Podcast episodes and feeds."},
	{"books", "book", "Library books, loans and due dates."},
	{"courses", "course", "Online courses, lessons and quizzes."},
	{"grades", "grade", "Student grades and report cards."},
	{"health", "appointment", "Doctor appointments and prescriptions."},
	{"fitness", "workout", "Workouts, steps and heart rate."},
	{"recipes", "recipe", "Cooking recipes and ingredients."},
	{"groceries", "list", "Grocery shopping lists."},
	{"restaurants", "reservation", "Restaurant table reservations."},
	{"home", "device", "Smart home lights, thermostats and locks."},
	{"cars", "vehicle", "Vehicle maintenance and fuel logs."},
	{"parking", "space", "Parking spaces and permits."},
	{"energy", "meter", "Electricity meters and energy usage."},
	{"iot", "sensor", "IoT sensors and telemetry readings."},
	{"printing", "printer", "Printers and print jobs."},
	{"assets", "asset", "IT asset inventory: laptops, monitors, licenses."},
	{"procurement", "purchase", "Purchase orders and suppliers."},
	{"contracts", "vendor", "Vendor management and supplier risk."},
	{"projects", "task", "Project tasks, milestones and sprints."},
	{"timesheets", "timesheet", "Timesheets and billable hours."},
	{"okrs", "objective", "Objectives and key results."},
	{"feedback", "note", "Performance feedback and one-on-one notes."},
	{"events", "venue", "Conference venues, tickets and attendees."},
	{"donations", "donor", "Charity donors and donations."},
	{"realestate", "listing", "Real estate listings and viewings."},
	{"legalcases", "case", "Court cases, hearings and filings."},
	{"pets", "pet", "Pet care, vaccinations and vet visits."},
	{"garden", "plant", "Garden plants and watering schedules."},
	{"astronomy", "star", "Star charts and telescope observations."},
	{"chemistry", "compound", "Chemical compounds and reactions."},
	{"genomics", "sequence", "DNA sequences and gene annotations."},
	{"support", "article", "Help center articles for customer self-service."},
}

// verbs are the ten tools of each group: <verb>_<thing>.
var verbs = [10][2]string{
	{"create", "Create a new %s."},
	{"list", "List every %s, newest first."},
	{"get", "Get one %s by its id."},
	{"update", "Change the fields of a %s."},
	{"delete", "Delete a %s for good."},
	{"find", "Find each %s whose text matches."},
	{"export", "Export %ss as CSV."},
	{"import", "Import %ss from CSV."},
	{"archive", "Archive an old %s."},
	{"share", "Share a %s with a colleague."},
}

// idSchema is the input of every tool of the fixture.
var idSchema = json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"the id of the item"}},"additionalProperties":false}`)

// bigToolkit registers 1,000 tools in 100 groups of 10, plus three basic
// tools. With search, tool_search is installed beside reset_tools; with
// grouped false, no groups are installed at all (every tool is shown).
func bigToolkit(tb testing.TB, search, grouped bool) (*toolkit.Toolkit, *groups.Manager) {
	tb.Helper()
	tk := toolkit.New()
	tb.Cleanup(func() { tk.Close(context.Background()) })
	add := func(name, desc string) {
		t, err := toolkit.NewRawTool(toolkit.Spec{Name: name, Description: desc, ConcurrencySafe: true}, idSchema,
			func(context.Context, json.RawMessage) ([]events.Part, error) {
				return []events.Part{events.Text(name + " ran")}, nil
			})
		if err != nil {
			tb.Fatal(err)
		}
		if err := tk.Add(t); err != nil {
			tb.Fatal(err)
		}
	}
	for _, b := range []string{"now", "ask_user", "remember"} {
		add(b, "The basic "+b+" tool.")
	}
	var gs []groups.Group
	for gi, d := range domains {
		g := groups.Group{Name: d[0], Description: d[2], Instructions: "Use the " + d[0] + " tools carefully."}
		for _, v := range verbs {
			// The thing's name is unique per group: two groups act on "article".
			name := fmt.Sprintf("%s_%s", v[0], d[1])
			if gi == 99 {
				name = fmt.Sprintf("%s_help_%s", v[0], d[1])
			}
			add(name, fmt.Sprintf(v[1], strings.ReplaceAll(d[1], "_", " ")))
			g.Tools = append(g.Tools, name)
		}
		gs = append(gs, g)
	}
	if !grouped {
		return tk, nil
	}
	var opts []groups.Option
	if search {
		opts = append(opts, groups.WithToolSearch())
	}
	m, err := groups.Install(tk, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	if err := m.Add(gs...); err != nil {
		tb.Fatal(err)
	}
	return tk, m
}
