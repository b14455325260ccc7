package sim

import "strings"

// wordClass is a word's part of speech. The text generator chooses the next
// word's class from the previous token's, which is what makes its output
// read like (meaningless) English sentences.
type wordClass uint8

const (
	classNone    wordClass = iota // punctuation, bytes, special tokens, pieces
	classDet                      // determiners: "the", "every"
	classSubject                  // subject pronouns: "they"
	classObject                   // object pronouns: "them"
	classNoun
	classVerb // past tense, so that any subject agrees
	classAdj
	classAdv
	classPrep
	classConj
	numClasses
)

// wordLists returns the vocabulary's words by class, about 1,100 common
// English words. The lists are disjoint (a test checks it) so that each word
// token has one class.
func wordLists() [numClasses][]string {
	var w [numClasses][]string
	w[classDet] = strings.Fields(`
		the a an this that these those every each some many several no another such both most
	`)
	w[classSubject] = strings.Fields(`
		we they it he she you everyone somebody
	`)
	w[classObject] = strings.Fields(`
		them him her us me everything something nothing
	`)
	w[classNoun] = strings.Fields(`
		time year people way day man woman child world life hand part place case week company system
		program question work government number night point home water room mother area money story fact
		month lot study book eye job word business issue side kind head house service friend father
		power hour game line end member law car city community name president team minute idea kid body
		information back parent face level office door health person art war history party result change
		morning reason research girl guy moment air teacher force education foot boy age policy process
		music market sense nation plan college interest death experience effect class control field
		development role effort rate heart drug show leader light voice wife police mind price report
		decision son view relationship town road arm difference value building action model season
		society tax director position player record paper space ground form event official matter center
		couple site project activity star table need court oil situation cost industry figure street
		image phone data picture practice piece land product doctor wall patient worker news test movie
		north love support technology step baby computer type attention film tree source organization
		hair window evidence population truth garden river mountain island forest ocean village bridge
		castle kitchen library station hospital school church museum theater restaurant hotel airport
		harbor valley desert lake beach farm factory engine machine network server database signal
		message letter note song poem novel chapter page sentence language grammar lesson student
		scientist engineer artist writer farmer soldier captain king queen prince sister brother
		daughter husband neighbor stranger guest visitor traveler crowd audience weather rain snow wind
		storm sun moon sky cloud fire stone metal glass wood bread coffee tea milk dinner lunch
		breakfast meal fruit apple orange flower grass bird dog cat horse fish animal insect seed root
		leaf branch path trail map journey trip adventure problem solution answer method approach theory
		principle rule pattern structure design feature function variable memory cache request response
		error failure success chance risk benefit advantage goal purpose strategy task schedule budget
		resource capacity demand supply growth trade economy profit loss account bank credit debt income
		salary contract agreement meeting conference discussion debate argument opinion belief feeling
		emotion fear hope joy anger surprise dream habit skill talent ability knowledge wisdom science
		physics chemistry biology mathematics medicine economics philosophy culture tradition religion
		custom festival holiday birthday wedding ceremony celebration century decade future present
		evening afternoon weekend summer winter spring autumn corner edge surface middle bottom top
		front shape size color sound smell taste touch silence noise shadow photo camera screen keyboard
		battery wire cable button switch lamp clock watch ring key lock box bag bottle cup plate bowl
		knife spoon chair bed desk shelf floor roof stair gate fence yard avenue highway tunnel port
		ship boat train plane bicycle truck wheel fuel energy electricity heat temperature pressure
		speed distance weight height depth length volume amount quantity balance limit range scale
		measure unit degree percent share portion
	`)
	w[classVerb] = strings.Fields(`
		said made went took came saw knew got gave found thought told became showed left felt brought
		began kept held wrote stood heard meant met ran paid sat spoke led grew lost fell sent built
		understood drew broke spent rose drove bought wore chose caught taught sold fought threw used
		worked called tried asked needed seemed helped talked turned started moved lived believed
		happened included continued changed played wanted looked appeared provided created allowed added
		expected offered remembered considered suggested opened walked reached killed remained served
		passed learned decided returned explained hoped developed carried received agreed supported
		produced increased covered described reported raised discovered revealed noticed followed
		stopped watched entered formed reduced required improved collected prepared designed tested
		measured compared studied published analyzed explored visited painted answered finished filled
		closed joined managed handled protected replaced solved shared saved signed wondered imagined
		welcomed praised questioned checked delivered launched completed achieved announced argued
		claimed defended demanded earned enjoyed established examined expanded failed fixed gathered
		guided identified ignored inspired introduced invented invited listened loved mentioned missed
		ordered organized owned planned pointed preferred presented pressed prevented printed promised
		proved pulled pushed recognized recorded recommended refused rejected released relied repeated
		represented rescued resolved responded restored reviewed rolled searched selected settled shaped
		shifted smiled sorted spread stayed stored struggled succeeded suffered supplied surrounded
		survived switched thanked touched traced trained transformed traveled treated trusted united
		updated urged valued viewed voted waited warned washed wished worried wrapped yelled borrowed
		baked cleaned climbed cooked danced dropped fished
	`)
	w[classAdj] = strings.Fields(`
		good new first last long great little own other old big high different small large next early
		young important few public bad same able human local late hard major better economic strong
		possible whole free military true federal international full special easy clear recent certain
		personal open red difficult available likely short single medical current wrong private past
		foreign fine common poor natural significant similar hot dead central happy serious ready simple
		physical general environmental financial blue democratic dark various entire close legal
		religious cold final main green nice huge popular traditional cultural wide quiet quick slow
		bright careful gentle brave calm clever curious eager fair famous friendly funny honest lazy
		loud lucky modern narrow polite proud rare rich rough safe sharp smooth soft strange sudden
		sweet tall thick thin tiny warm weak wild wise ancient beautiful broken busy cheap clean complex
		correct crazy deep distant dry empty exact extra fresh heavy hidden ideal isolated loose massive
		mental minor mysterious neat normal obvious odd original perfect plain pleasant powerful
		practical precious pure raw real regular related relevant remote robust secret secure silent
		solid stable steady sufficient typical unique unusual useful valuable vast visible vital wooden
		yellow golden silver purple white black brown gray pink elegant efficient familiar flexible
		fragile generous gradual healthy helpful humble innocent logical loyal mature modest noble
		optimal peaceful precise rapid reliable rural scientific
	`)
	w[classAdv] = strings.Fields(`
		also often never always then still already really finally quickly slowly carefully suddenly
		usually sometimes soon perhaps probably certainly clearly simply quietly easily rarely recently
		nearly almost actually eventually gradually immediately later together again once twice
		everywhere somewhere anywhere instead indeed meanwhile otherwise therefore however moreover
		honestly openly gently happily sadly proudly bravely briefly deeply directly exactly fairly
		greatly largely mostly naturally partly properly rapidly
	`)
	w[classPrep] = strings.Fields(`
		of in to for with on at from by about as into like through after over between out against during
		without before under around among across behind beyond beneath toward upon within along near
		inside outside despite
	`)
	w[classConj] = strings.Fields(`
		and but or so yet because although while since unless whereas though
	`)
	return w
}
